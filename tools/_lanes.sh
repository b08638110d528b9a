# shellcheck shell=bash
# Sourced by .ci/run: CI's stages on lanes that run side by side (one per core), each stage's
# output kept in a log of its own and printed whole when the stage ends (lanes never interleave),
# every exit status checked.
#
#   stage NAME CMD [ARG...]   run CMD as the stage NAME: in a lane, or in the script itself
#   lane LETTER FUNCTION      declare a lane: FUNCTION, a list of `stage` calls, run in the
#                             background in a process group of its own
#   after_lane LETTER         (in a lane) wait until lane LETTER has ended
#   lanes_run                 start the lanes declared, reap them all; status 0 iff every stage
#                             passed, 130 if interrupted; then a table of every stage's time
#
# A failed stage fails its lane: the lane's later stages do not run, and the other lanes are
# stopped (SIGINT to each lane's process group, so pytest ends as at a Ctrl-C and tears down
# what it started; SIGTERM after DGAUSS_CI_GRACE seconds, default 60; SIGKILL 15 s later), then
# reaped: nothing is left running when lanes_run returns.  DGAUSS_CI_KEEP_GOING=1 runs every
# stage whatever fails (the status is still 1).  A SIGINT or SIGTERM to the script stops the
# lanes the same way; the script killed outright (SIGKILL), each lane kills its process group
# within a second.
#
# Every stage's command starts with SIGINT at its default (a command put in the background by
# a script would start with it ignored, and the tests that interrupt their children need it).
#
# Dry run of the scheduler: DGAUSS_CI_FAKE="NAME=SECONDS[:STATUS] ... [*=SECONDS[:STATUS]]"
# replaces every stage's command by `sleep SECONDS; exit STATUS` (those of NAME, else those of
# `*`, else 0 and 0), e.g. DGAUSS_CI_FAKE='*=2 slow=3:1' (.ci/run then skips its install and
# quick check too).

LANES_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ci-lanes.XXXXXX")
LANES_T0=$(date +%s)  # the script's start, near enough
_lanes_letters=()
_lanes_functions=()
_lane=main      # the lane this shell runs (`main`: the script itself)
_lane_failed=0  # whether a stage of this lane failed

_lanes_main=$$  # the script
_lanes_pids=()  # the lanes still running: each one's PID, which is its process group's ID
# cleanup when the script exits, whatever way: no lane left running, the logs removed
_lanes_exit() {
    _lanes_stop KILL
    rm -rf "$LANES_DIR"
}
: >"$LANES_DIR/stages"
trap _lanes_exit EXIT

_lanes_file() {  # NAME: a file name for stage NAME
    printf '%s' "${1//[^A-Za-z0-9._-]/_}"
}

_lanes_say() {  # TEXT...: one line on stdout, not in the middle of a log being printed
    {
        flock 9
        printf '== ci [%s] %s\n' "$_lane" "$*"
    } 9>>"$LANES_DIR/print.lock"
}

_lanes_fake() {  # NAME: "SECONDS STATUS" of a dry run's stage NAME (DGAUSS_CI_FAKE)
    local entries entry key value fallback="0:0" found=
    read -r -a entries <<<"$DGAUSS_CI_FAKE"
    for entry in "${entries[@]}"; do
        key=${entry%%=*} value=${entry#*=}
        if [ "$key" = "$entry" ] || ! [[ $value =~ ^[0-9]+(:[0-9]+)?$ ]]; then
            echo "ci: DGAUSS_CI_FAKE: '$entry' is not NAME=SECONDS[:STATUS]" >&2
            return 2
        fi
        [[ $value == *:* ]] || value="$value:0"
        [ "$key" = "$1" ] && found=$value
        [ "$key" = '*' ] && fallback=$value
    done
    value=${found:-$fallback}
    echo "${value%%:*} ${value#*:}"
}

stage() {
    local name=$1 file log start seconds rc=0 result fake pid
    shift
    file=$(_lanes_file "$name")
    if [ -e "$LANES_DIR/stop" ] ||
        { [ "$_lane_failed" -ne 0 ] && [ -z "${DGAUSS_CI_KEEP_GOING:-}" ]; }; then
        _lanes_say "$name: not run"
        _lanes_record "$name" "not run" "$(date +%s)" 0
        _lane_failed=1
        return 1
    fi
    if [ -n "${DGAUSS_CI_FAKE:-}" ]; then
        fake=$(_lanes_fake "$name") || {
            _lanes_record "$name" "FAILED (DGAUSS_CI_FAKE)" "$(date +%s)" 0
            _lane_failed=1
            return 2
        }
        # shellcheck disable=SC2016,SC2086  # $1 and $2 are bash -c's; $fake: two words
        set -- bash -c 'sleep "$1" || exit; exit "$2"' "fake:$name" $fake
    fi
    log="$LANES_DIR/$file.log"
    start=$(date +%s)
    _lanes_say "$name: started ($*)"
    if [ "$_lane" = main ]; then
        (trap - INT && exec "$@") >"$log" 2>&1 </dev/null || rc=$?
    else
        # in the background of the lane, which meanwhile checks each second that the script is
        # still there: killed without a chance to stop its lanes, it takes them with it
        (trap - INT && exec {_lanes_tick_fd}<&- && exec "$@") >"$log" 2>&1 </dev/null &
        pid=$!
        while kill -0 "$pid" 2>/dev/null; do
            _lanes_tick
        done
        wait "$pid" || rc=$?
    fi
    seconds=$(($(date +%s) - start))
    if [ "$rc" -eq 0 ]; then
        result=passed
    elif [ -e "$LANES_DIR/stop" ]; then
        result="stopped (exit $rc)"
        _lane_failed=1
    else
        result="FAILED (exit $rc)"
        _lane_failed=1
    fi
    {
        flock 9
        printf '\n==== ci [%s] %s: %s in %d s: %s\n' "$_lane" "$name" "$result" "$seconds" "$*"
        cat "$log"
        [ "$rc" -eq 0 ] ||
            printf '==== ci [%s] %s: %s (its output above)\n' "$_lane" "$name" "$result"
        printf '\n'
    } 9>>"$LANES_DIR/print.lock"
    _lanes_record "$name" "$result" "$start" "$seconds"
    return "$rc"
}

_lanes_record() {  # NAME RESULT START SECONDS: a row of the closing table
    {
        flock 9
        printf '%s\t%s\t%d\t%d\t%s\n' "$_lane" "$1" "$(($3 - LANES_T0))" "$4" "$2" \
            >>"$LANES_DIR/stages"
    } 9>>"$LANES_DIR/print.lock"
}

lane() {
    _lanes_letters+=("$1")
    _lanes_functions+=("$2")
}

after_lane() {
    [ -e "$LANES_DIR/lane-$1" ] || {
        _lanes_say "after_lane $1: there is no lane $1"
        _lane_failed=1
        return 1
    }
    [ -e "$LANES_DIR/lane-$1.ended" ] || [ -e "$LANES_DIR/stop" ] ||
        _lanes_say "waiting for lane $1 to end"
    until [ -e "$LANES_DIR/lane-$1.ended" ] || [ -e "$LANES_DIR/stop" ]; do
        _lanes_tick
    done
}

_lanes_tick() {  # (in a lane) wait a second; if the script is gone, end this lane at once
    kill -0 "$_lanes_main" 2>/dev/null || {
        rm -rf "$LANES_DIR"
        kill -KILL -- "-$BASHPID"
    }
    read -r -t 1 -u "$_lanes_tick_fd" || true  # a second: nothing is ever written there
}

_lanes_in_lane() {  # LETTER FUNCTION: the body of a lane (in its background subshell)
    _lane=$1
    _lane_failed=0
    set +e
    # an interrupted stage ends its lane (the stop file makes its later stages `not run`);
    # the lane's own shell outlives the signal to report it.  A handled signal is at its default
    # again in every command the lane starts.
    trap ':' INT TERM
    exec {_lanes_tick_fd}<>"$LANES_DIR/tick"
    "$2"
    exit "$_lane_failed"
}

_lanes_alive() {  # whether any process of a lane's group (its leader's PID) is still running
    kill -0 -- "-$1" 2>/dev/null
}

_lanes_stop() {  # SIGNAL: stop every lane still running (its whole process group)
    local pid
    : >"$LANES_DIR/stop"
    for pid in "${_lanes_pids[@]}"; do
        kill "-$1" -- "-$pid" 2>/dev/null || true
    done
}

lanes_run() {
    local i pid rc letter done_pid stopping='' signalled='' waited status=0 grace start
    local -a lane_of=()
    grace=${DGAUSS_CI_GRACE:-60}
    start=$(date +%s)
    for letter in "${_lanes_letters[@]}"; do
        : >"$LANES_DIR/lane-$letter"
    done
    mkfifo "$LANES_DIR/tick"
    trap 'signalled=130' INT
    trap 'signalled=143' TERM
    set -m  # each lane in a process group of its own, so that it can be stopped whole
    for i in "${!_lanes_letters[@]}"; do
        (_lanes_in_lane "${_lanes_letters[$i]}" "${_lanes_functions[$i]}") &
        pid=$!
        _lanes_pids+=("$pid")
        lane_of[pid]=${_lanes_letters[$i]}
    done
    set +m
    _lanes_say "lanes ${_lanes_letters[*]} started"
    while [ ${#_lanes_pids[@]} -gt 0 ]; do
        if [ -n "$signalled" ] && [ -z "$stopping" ]; then
            stopping=1
            _lanes_say "interrupted: stopping the lanes"
            _lanes_stop INT
        fi
        if [ -n "$stopping" ]; then
            # wait without blocking, so that the stubborn are escalated to
            waited=0
            while :; do
                for pid in "${_lanes_pids[@]}"; do
                    _lanes_alive "$pid" && break
                    pid=
                done
                [ -z "$pid" ] && break
                sleep 1
                waited=$((waited + 1))
                if [ "$waited" -eq "$grace" ]; then
                    _lanes_say "still running ${grace} s after SIGINT: SIGTERM"
                    _lanes_stop TERM
                elif [ "$waited" -eq $((grace + 15)) ]; then
                    _lanes_say "still running: SIGKILL"
                    _lanes_stop KILL
                fi
            done
        fi
        done_pid=
        rc=0
        wait -n -p done_pid "${_lanes_pids[@]}" || rc=$?
        [ -n "${done_pid:-}" ] || continue  # a signal, not a lane's end
        letter=${lane_of[done_pid]}
        : >"$LANES_DIR/lane-$letter.ended"
        for i in "${!_lanes_pids[@]}"; do
            [ "${_lanes_pids[$i]}" = "$done_pid" ] && unset '_lanes_pids[i]'
        done
        _lanes_pids=("${_lanes_pids[@]}")
        # what a lane left behind in its group (a stage's stray child) is ended too
        if _lanes_alive "$done_pid"; then
            _lanes_say "lane $letter left processes running: SIGKILL"
            kill -KILL -- "-$done_pid" 2>/dev/null || true
        fi
        if [ "$rc" -ne 0 ]; then
            status=1
            if [ -z "$stopping" ] && [ -z "${DGAUSS_CI_KEEP_GOING:-}" ] &&
                [ ${#_lanes_pids[@]} -gt 0 ]; then
                stopping=1
                _lanes_say "lane $letter failed: stopping the other lanes"
                _lanes_stop INT
            fi
        fi
    done
    trap - INT TERM
    _lane=main
    {
        echo
        echo "== ci: each stage: lane, name, start (s after the script's), seconds, result"
        sort -t $'\t' -k3,3n -k1,1 "$LANES_DIR/stages" 2>/dev/null |
            awk -F '\t' '{ printf "   %-5s %-22s %5d %5d  %s\n", $1, $2, $3, $4, $5 }' || true
        echo "== ci: the lanes took $(($(date +%s) - start)) s; the script so far," \
            "$(($(date +%s) - LANES_T0)) s"
    }
    if [ -n "$signalled" ]; then
        echo "== ci: interrupted"
        return "$signalled"
    fi
    if [ "$status" -ne 0 ]; then
        echo "== ci: FAILED:"
        awk -F '\t' '$5 !~ /^passed/ { printf "   %s (lane %s): %s\n", $2, $1, $5 }' \
            "$LANES_DIR/stages"
        return 1
    fi
    echo "== ci: every stage passed"
}
