# Included by _core.pyx.  One public call's job (_Job): its parameters, scratch space, bit
# streams and the batch fill with the GIL released.

# A batch from the OS uses a second CPU where one is idle: from SPLIT_FROM samples on it is
# split between two threads, each reading its own stream (os_threads; _driver.draw); from
# READ_AHEAD_FROM samples on a batch on one thread reads its source ahead on a thread of its
# own (_Job.start_ahead: about 1 ms of drawing or more, so the thread's start, ~50 us, is
# small beside it).  -1: never; where every CPU is busy only if READ_AHEAD_BUSY.
cdef Py_ssize_t READ_AHEAD_FROM = 1 << 16
cdef Py_ssize_t SPLIT_FROM = 1 << 17
cdef bint READ_AHEAD_BUSY = False
cdef uint64_t _ahead_runs = 0  # batches that read ahead (read_ahead_runs)


def read_ahead(Py_ssize_t samples=1 << 16, bint when_busy=False, Py_ssize_t split_from=1 << 17):
    """Set how a batch from the OS uses a second CPU (for tests and benchmarks): a batch on
    one thread reads the OS ahead from `samples` samples on, a batch without `workers` is
    split between two threads from `split_from` samples on (-1: never), and with
    `when_busy` both happen also where every CPU is busy (still only with two CPUs or
    more).  Returns the settings it replaced, as keywords (``read_ahead(**old)`` puts them
    back)."""
    global READ_AHEAD_FROM, READ_AHEAD_BUSY, SPLIT_FROM
    if samples < -1:
        raise ValueError(f"samples must be -1 or a count >= 0, got {samples}")
    if split_from < -1:
        raise ValueError(f"split_from must be -1 or a count >= 0, got {split_from}")
    old = {"samples": READ_AHEAD_FROM, "when_busy": READ_AHEAD_BUSY, "split_from": SPLIT_FROM}
    READ_AHEAD_FROM, READ_AHEAD_BUSY, SPLIT_FROM = samples, when_busy, split_from
    return old


def os_threads(Py_ssize_t n):
    """The threads a batch of `n` samples from the OS runs on when its call names no
    `workers`: 2 from SPLIT_FROM samples on where the process may run on two CPUs or more
    and one of them is idle now (dg_ahead_idle_cpu: /proc/loadavg's runnable threads fewer
    than the CPUs), else 1.  Each thread reads its own stream of the OS, so a sample costs
    half its reading and computing where a reader thread (start_ahead) makes it the larger
    of the two."""
    if SPLIT_FROM < 0 or n < SPLIT_FROM or dg_ahead_cpus() < 2:
        return 1
    return 2 if READ_AHEAD_BUSY or dg_ahead_idle_cpu() else 1


def read_ahead_runs():
    """For tests: how many batches have read their source ahead in this process."""
    return _ahead_runs


def cpus():
    """How many CPUs this process may run on (sched_getaffinity): a batch reads ahead only
    where there are two or more."""
    return dg_ahead_cpus()


def os_read_seconds(Py_ssize_t reads):
    """For benchmarks: seconds to read ``reads`` chunks of 16 KiB from the OS as the reader
    thread and the streams do (dg_fill_os into one buffer, the GIL released): the rate a
    sampler on this source cannot beat."""
    cdef uint64_t *words = <uint64_t *>malloc(OS_BUFFER_WORDS * sizeof(uint64_t))
    cdef timespec t0, t1
    cdef dg_os_ctx ctx
    cdef int rc = DG_OK
    cdef Py_ssize_t i
    if words == NULL:
        raise MemoryError()
    ctx.err = 0
    with nogil:
        clock_gettime(CLOCK_MONOTONIC, &t0)
        for i in range(reads):
            rc = dg_fill_os(&ctx, words, OS_BUFFER_WORDS)
            if rc != DG_OK:
                break
        clock_gettime(CLOCK_MONOTONIC, &t1)
        memset(words, 0, OS_BUFFER_WORDS * sizeof(uint64_t))
    free(words)
    if rc != DG_OK:
        raise OSError(ctx.err or _errno.EIO, "dgauss could not read randomness from the OS")
    return (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9


def idle_cpu():
    """Whether a reader thread would find a CPU of its own now (dg_ahead_idle_cpu)."""
    return bool(dg_ahead_idle_cpu())


cdef class _Job:
    """Everything one public call needs: parameters, scratch space, its bit stream (two, its
    lanes, for an int64 batch by inversion from the OS)."""
    cdef State s
    cdef uint64_t *buf
    cdef uint64_t *buf2         # the second lane's (State.lanes)
    cdef dg_os_ctx os_ctx, os_ctx2
    cdef dg_os_script script, script2   # a testing ScriptedOS's state for this call (each lane)
    cdef ChaChaState chacha     # a dgauss.ChaCha20's state for this thread (both lanes)
    cdef mpz_t *vals
    cdef TapeWords tape
    cdef dg_decider decider
    cdef uint64_t *exp_h    # Algorithm 2's table of digits
    cdef AcceptEntry *accept # Algorithm 3's cache of digits
    cdef uint64_t *geo_thr  # Algorithm 2's thresholds for the inversion
    cdef object source      # keeps a tape's arrays alive while C points into them
    cdef object table       # the table the inversion reads (kept alive while C points in)
    cdef object continuation    # dgauss._inversion.invert past R's 64th bit
    cdef object error       # the exception of a failed Python step (DG_ERR_CALLBACK)
    cdef Py_ssize_t obj_chunk   # samples per stretch into an object array, at most
    cdef Py_ssize_t nvals       # how many GMP integers vals has: obj_chunk, or fewer for a
                                # smaller array (a scalar inits one, not thousands)
    cdef size_t headroom        # bytes GMP may need during one stretch (reserve)
    cdef uint64_t last_bits     # OS bits its last call read, and how many samples it drew
    cdef uint64_t last_samples  # (0: none yet): restart_os sizes the first read by them
    cdef uint64_t rate_hint     # bits a sample by inversion reads, about and above (0: unknown)
    cdef bint ahead_ok          # a large batch may read ahead (start_ahead)
    cdef object halt            # a worker's slices: its .stopped ends a slice (run)
    cdef dg_fill_fn own_fill, own_fill2   # the streams' own source while they read ahead
    cdef void *own_ctx
    cdef void *own_ctx2

    def __cinit__(self):
        _work_init(&self.s.w)
        _params_init(&self.s.p)
        mpz_init(self.s.mu)
        mpz_init(self.decider.want_a)
        mpz_init(self.decider.want_b)
        self.buf = NULL
        self.buf2 = NULL
        self.vals = NULL
        self.nvals = 0
        self.exp_h = NULL
        self.accept = NULL
        self.geo_thr = NULL
        self.obj_chunk = 1

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.vals != NULL:
            for i in range(self.nvals):
                mpz_clear(self.vals[i])
            free(self.vals)
        # the words read (the samples drawn could be told from them) are zeroed before the
        # memory goes back: a job no cache keeps (a general call's) ends here
        dg_rng_wipe(&self.s.rng)
        dg_rng_wipe(&self.s.rng2)
        free(self.buf)
        free(self.buf2)
        free(self.exp_h)
        free(self.accept)
        free(self.geo_thr)
        mpz_clear(self.decider.want_a)
        mpz_clear(self.decider.want_b)
        mpz_clear(self.s.mu)
        _params_clear(&self.s.p)
        _work_clear(&self.s.w)

    cdef int reserve(self) except -1:
        """MemoryError unless `headroom` bytes can be allocated now: GMP aborts the process when
        an allocation fails, so the memory its numbers may need is tried first, with the GIL
        held, before each stretch (and before the set-up's own arithmetic)."""
        cdef void *probe = malloc(self.headroom)
        if probe == NULL:
            raise MemoryError(
                f"dgauss needs about {self.headroom >> 20} MiB free for the exact arithmetic "
                "of these parameters and could not get it")
        free(probe)
        return 0

    cdef void restart_os(self, Py_ssize_t n):
        """Start a fresh stream of OS bits for the next call of a job set up for the OS
        (``source=None``) as a new job starts: nothing read before is read again, and the
        lanes' phase back at 0 (fill's per-thread jobs).  The first read is sized for ``n``
        samples at the bits per sample the job's last call read, plus a quarter (a read
        costs about as much as 2 KiB of bits: one read where the batch needs no more,
        rather than reads of 4, 8, 16, ... words), at least OS_FIRST_BLOCK words."""
        cdef size_t first = self.first_read(n)
        self.s.phase = 0
        self.os_ctx.err = 0
        dg_rng_init(&self.s.rng, dg_fill_os, &self.os_ctx, self.buf, OS_BUFFER_WORDS, first)
        if self.s.lanes:
            self.os_ctx2.err = 0
            dg_rng_init(&self.s.rng2, dg_fill_os, &self.os_ctx2, self.buf2, OS_BUFFER_WORDS,
                        first)
            if n >= 2 and self.last_samples > 0:  # both lanes will draw: one read for both
                dg_rng_preload_pair(&self.s.rng, &self.s.rng2, first)

    cdef void restart_keyed(self, Py_ssize_t n):
        """Start fresh streams for a call of ``n`` samples of a job set up for a
        dgauss.ChaCha20 (a new job, and the kept jobs of its lean calls) on dg_fill_chacha
        from the job's state (this thread's: the cache's key holds it), the lanes' phase back
        at 0, each lane's first read sized for n samples at rate_hint bits (keyed_read); so
        a kept job's call draws exactly what a new job draws from the state.  A state
        forgotten (reseed) or unkeyed keys itself from the OS on the first read."""
        cdef size_t first = self.keyed_read(n)
        self.s.phase = 0
        self.chacha.st.err = 0
        dg_rng_init(&self.s.rng, dg_fill_chacha, self.chacha.st, self.buf, OS_BUFFER_WORDS,
                    first)
        if self.s.lanes:
            dg_rng_init(&self.s.rng2, dg_fill_chacha, self.chacha.st, self.buf2,
                        OS_BUFFER_WORDS, first)

    cdef size_t first_read(self, Py_ssize_t n):
        """The first read's words (each lane's) for ``n`` samples (restart_os): n samples
        at the last call's bits per sample, plus a quarter (lane_words).  Integers only
        (each factor below 2^32 here, so the product fits: a larger n or rate is a full
        buffer anyway)."""
        cdef uint64_t rate
        if self.last_samples == 0 or n <= 0:
            return OS_FIRST_BLOCK
        rate = self.last_bits // self.last_samples + 1  # bits per sample, rounded up
        if rate >= (<uint64_t>1 << 24) or <uint64_t>n >= (<uint64_t>1 << 24):
            return OS_BUFFER_WORDS
        return self.lane_words(rate * <uint64_t>n * 5 // 4)

    cdef size_t keyed_read(self, Py_ssize_t n):
        """The first read's words (each lane's) for ``n`` samples from a dgauss.ChaCha20
        (restart_keyed): n samples at rate_hint bits (lane_words), a function of the
        parameters and n only, as the samples must be (a kept job and a new one draw
        alike).  One read where the batch needs no more: a lane's samples across a refill
        are drawn step by step, 20-50 times slower than the lane loop's."""
        if self.rate_hint == 0 or n <= 0:
            return OS_FIRST_BLOCK
        if <uint64_t>n >= (<uint64_t>1 << 24):
            return OS_BUFFER_WORDS
        return self.lane_words(self.rate_hint * <uint64_t>n)

    cdef size_t lane_words(self, uint64_t bits):
        """Each lane's share of ``bits``, in words, plus 2; from OS_FIRST_BLOCK to
        OS_BUFFER_WORDS."""
        cdef uint64_t lanes = 2 if self.s.lanes else 1
        cdef uint64_t want = bits // (64 * lanes) + 2
        if want > OS_BUFFER_WORDS:
            return OS_BUFFER_WORDS
        return want if want > OS_FIRST_BLOCK else OS_FIRST_BLOCK

    cdef void read_per_sample(self, Py_ssize_t n):
        """Note the OS bits the call just made read, and for how many samples (restart_os)."""
        cdef uint64_t used = dg_bits_used(&self.s.rng)
        if self.s.lanes:
            used += dg_bits_used(&self.s.rng2)
        if n > 0:
            self.last_bits, self.last_samples = used, <uint64_t>n

    cdef void wipe(self):
        """Zero the OS words read (the noise just drawn could be told from them) before the
        job waits in the cache (dg_rng_wipe)."""
        dg_rng_wipe(&self.s.rng)
        if self.s.lanes:
            dg_rng_wipe(&self.s.rng2)

    cdef size_t nonzero_words(self):
        """How many words of the OS buffers are not zero (cached_jobs_nonzero_words)."""
        cdef size_t i, found = 0, cap = OS_BUFFER_WORDS
        for i in range(cap):
            found += self.buf[i] != 0
            if self.s.lanes:
                found += self.buf2[i] != 0
        return found

    cdef int setup(self, int kind, object num, object den, object mu, object source,
                   unsigned long high_bits, bint fixed_point, bint inversion=False,
                   Py_ssize_t n=0) except -1:
        """Set the job up for `source` (``n``: the samples of the call it is made for, which
        size a dgauss.ChaCha20's first reads: restart_keyed)."""
        cdef Params *p = &self.s.p
        cdef bitgen_t *bg
        # GMP's largest numbers: Algorithm 3's (a d t - n)^2 2**128 and its divisor 2 n d t^2
        # (t about sqrt(n/d)); a Laplace or Bernoulli parameter's n, d; mu; with room for
        # GMP's scratch (a multiplication or division needs a few times its operands)
        operand_bits = (2 * (num.bit_length() + 2 * den.bit_length() + 192)
                        + abs(mu).bit_length() + 256)
        self.headroom = 16 * (operand_bits // 8) + 4 * OBJECT_CHUNK_BYTES
        self.reserve()
        self.s.kind = kind
        p.fixed_point = fixed_point
        int_to_mpz(p.N, num)
        int_to_mpz(p.D, den)
        if kind == KIND_DISCRETE_LAPLACE:
            mpz_set(p.lap.T, p.N)
            mpz_set(p.lap.S, p.D)
        elif kind == KIND_DISCRETE_GAUSSIAN:
            # t = floor(sqrt(n/d)) + 1 = isqrt(floor(n/d)) + 1, exactly
            mpz_fdiv_q(p.lap.T, p.N, p.D)
            mpz_sqrt(p.lap.T, p.lap.T)
            mpz_add_ui(p.lap.T, p.lap.T, 1)
            mpz_set_ui(p.lap.S, 1)
            mpz_mul(p.DT, p.D, p.lap.T)
            mpz_mul(p.DEN, p.DT, p.lap.T)
            mpz_mul(p.DEN, p.DEN, p.N)
            mpz_mul_2exp(p.DEN, p.DEN, 1)
            p.small = (_fits_word(p.N) and _fits_word(p.DT)
                       and mpz_cmp_ui(p.DEN, DG_BERNOULLI_DMAX) <= 0)
            if p.small:
                p.n = mpz_get_ui(p.N)
                p.dt = mpz_get_ui(p.DT)
                p.den = mpz_get_ui(p.DEN)
            mpz_mul_2exp(p.TWO_N, p.N, 1)
            p.low_words = mpz_fits_ulong_p(p.D) and dg_mpz_get_u128(p.TWO_N, &p.two_n)
            p.d_one = mpz_cmp_ui(p.D, 1) == 0
            if p.low_words:
                p.d = mpz_get_ui(p.D)
        p.lap.t_small = _fits_word(p.lap.T)
        p.lap.small = p.lap.t_small and _fits_word(p.lap.S)
        p.lap.s_one = mpz_cmp_ui(p.lap.S, 1) == 0
        if p.lap.t_small:
            p.lap.t = mpz_get_ui(p.lap.T)
        if p.lap.small:
            p.lap.s = mpz_get_ui(p.lap.S)
        p.lap.inversion = p.lap.t_small and p.lap.t <= DG_INVERSION_MAX
        if inversion:
            # by inversion: the tables, none of Algorithms 2-3's
            self.s.inversion = True
            # log2 of sigma^2 (or of the scale) is below `lg`: a sample by inversion reads
            # about its law's entropy, 1/2 lg + 2 (Gaussian) or lg + 2.5 bits, and 3-5 more
            lg = max(num.bit_length() - den.bit_length() + 1, 0)
            self.rate_hint = ((lg + 1) // 2 if kind == KIND_DISCRETE_GAUSSIAN else lg) + 8
            self.s.owner = <void *>self
            param = Fraction(num, den)
            if kind == KIND_DISCRETE_GAUSSIAN:
                self.table = gauss_table(num, den, fixed_point)
                floors = functools.partial(_inversion.gaussian_floors, param)
            else:
                self.table = laplace_table(num, den, fixed_point)
                floors = functools.partial(_inversion.LaplaceFloors, param)
            self.continuation = functools.partial(_inversion.invert, floors_at=floors)
            if isinstance(self.table, _EnvTable):
                (<_EnvTable>self.table).attach(&self.s.env)
                self.s.enveloped = True
                self.continuation = functools.partial(
                    _inversion.invert,
                    floors_at=_inversion.envelope(kind == KIND_DISCRETE_GAUSSIAN, param).stage_floors)
            elif isinstance(self.table, _BlockedTable):
                (<_BlockedTable>self.table).attach(&self.s.lb)
                self.s.blocked = True
                if kind == KIND_DISCRETE_GAUSSIAN:
                    self.continuation = functools.partial(
                        _inversion.gaussian_blocked_magnitude, sigma2=param)
                else:
                    self.continuation = functools.partial(
                        _inversion.laplace_blocked_magnitude, scale=param)
            else:
                tab = <_InvTable>self.table
                dg_inv_attach(&self.s.inv, <const uint64_t *>cnp.PyArray_DATA(tab.thr), tab.count,
                              <const unsigned int *>cnp.PyArray_DATA(tab.guide), 64 - tab.guide_bits)
        elif p.lap.inversion and (kind == KIND_DISCRETE_LAPLACE or kind == KIND_DISCRETE_GAUSSIAN):
            self.geo_thr = <uint64_t *>malloc(dg_geometric_table_size(p.lap.t) * sizeof(uint64_t))
            if self.geo_thr == NULL:
                raise MemoryError()
            e = _exp_e(p.lap.t, 0)
            dg_geometric_table_init(&p.lap.geo, p.lap.t, e >> 64, e & 0xFFFFFFFFFFFFFFFF,
                                    self.geo_thr, fixed_point)
            p.lap.blocks = p.lap.t
        elif kind == KIND_DISCRETE_LAPLACE or kind == KIND_DISCRETE_GAUSSIAN:
            self.exp_h = _laplace_setup(&p.lap, mpz_to_int(p.lap.T), high_bits, fixed_point)
        if kind == KIND_DISCRETE_GAUSSIAN and not inversion:
            p.accept_len = ACCEPT_CACHE_PER_T * p.lap.blocks
            # on cache lines, so that one block's 8 entries take two of them
            self.accept = <AcceptEntry *>aligned_alloc(64, p.accept_len * sizeof(AcceptEntry))
            if self.accept == NULL:
                raise MemoryError()
            memset(self.accept, 0, p.accept_len * sizeof(AcceptEntry))
            p.accept = self.accept
            if not p.lap.inversion:
                p.lap.warm = self.accept

        int_to_mpz(self.s.mu, mu)
        self.s.mu_small = mpz_fits_slong_p(self.s.mu)
        self.s.mu_zero = mpz_sgn(self.s.mu) == 0
        self.s.mu64 = mpz_get_si(self.s.mu) if self.s.mu_small else 0
        # a sample is about t/s + |mu| (or below N for uniform): stretches into an object array
        # keep about OBJECT_CHUNK_BYTES of GMP values, however large the values are
        value_bits = max(<Py_ssize_t>mpz_sizeinbase(p.lap.T, 2) - <Py_ssize_t>mpz_sizeinbase(p.lap.S, 2),
                         <Py_ssize_t>mpz_sizeinbase(self.s.mu, 2),
                         <Py_ssize_t>mpz_sizeinbase(p.N, 2) if kind == KIND_UNIFORM else 0) + 72
        self.obj_chunk = max(1, min(OBJECT_CHUNK, OBJECT_CHUNK_BYTES // (value_bits // 8 + 16)))

        self.source = source
        cdef bint os = source is None or isinstance(source, (_sources.ScriptedOS, _sources.KeyedSource))
        cdef size_t cap = OS_BUFFER_WORDS if os else 1
        self.buf = <uint64_t *>calloc(cap, sizeof(uint64_t))  # zero: only read words are not
        if self.buf == NULL:
            raise MemoryError()
        cdef dg_rng *rng = &self.s.rng
        # an int64 batch by inversion from the OS draws in two lanes, each with its own stream
        # and buffer (the second is filled only when a batch first draws from it)
        self.s.lanes = os and inversion and (
            source is None or isinstance(source, _sources.KeyedSource) or source.lanes == 2)
        if self.s.lanes:
            self.buf2 = <uint64_t *>calloc(cap, sizeof(uint64_t))
            if self.buf2 == NULL:
                raise MemoryError()
        if source is None:
            dg_rng_init(rng, dg_fill_os, &self.os_ctx, self.buf, cap, OS_FIRST_BLOCK)
            if self.s.lanes:
                dg_rng_init(&self.s.rng2, dg_fill_os, &self.os_ctx2, self.buf2, cap,
                            OS_FIRST_BLOCK)
        elif isinstance(source, _sources.KeyedSource):
            self.chacha = source._state()  # this thread's (a fill runs on the thread that made the job)
            self.restart_keyed(n)           # (cap is OS_BUFFER_WORDS: an OS-like source)
        elif isinstance(source, _sources.ScriptedOS):
            memset(&self.script, 0, sizeof(self.script))
            self.script.fail_after = source.fail_after
            self.script.fail_count = source.fail_count
            self.script.fail_errno = source.fail_errno
            self.script.fake = source.fake
            self.script2 = self.script
            self.script2.fake_next = 8 * _sources.LANE_2_FAKE_WORD    # a byte index
            self.script2.first = _sources.LANE_2_FAKE_WORD
            _prefix(&self.script, source.prefix[0])
            _prefix(&self.script2, source.prefix[1])
            dg_rng_init(rng, dg_fill_scripted, &self.script, self.buf, cap, OS_FIRST_BLOCK)
            if self.s.lanes:
                dg_rng_init(&self.s.rng2, dg_fill_scripted, &self.script2, self.buf2, cap,
                            OS_FIRST_BLOCK)
        elif isinstance(source, _sources.Tape):
            self.tape.words = <const uint64_t *>cnp.PyArray_DATA(source.words)
            self.tape.count = source.words.size
            self.tape.pos = min(source.position, source.words.size)
            dg_rng_init(rng, fill_tape, &self.tape, self.buf, 1, 1)
            rng.bit_budget = source.bits_left
        elif isinstance(source, _sources.DecisionTape):
            self.decider.outcomes = <const uint64_t *>cnp.PyArray_DATA(source.outcomes)
            self.decider.count = source.outcomes.size
            self.decider.pos = 0
            self.decider.want = DG_WANT_NONE
            dg_rng_init(rng, fill_refuse, NULL, self.buf, 1, 1)
            rng.decider = &self.decider
            rng.stop_at_restart = source.stop_at_restart
        else:
            bg = <bitgen_t *>PyCapsule_GetPointer(source.capsule, "BitGenerator")
            # lazy: one word at a time, so a generator is left exactly where the oracle leaves it
            dg_rng_init(rng, fill_bitgen, bg, self.buf, 1, 1)
        return 0

    cdef int raise_status(self, int rc) except -1:
        if rc == DG_ERR_ENTROPY:
            err = (self.os_ctx.err or self.os_ctx2.err or self.script.os.err
                   or self.script2.os.err or (self.chacha is not None and self.chacha.st.err)
                   or _errno.EIO)
            raise OSError(err, "dgauss could not read randomness from the operating system: "
                          + _os.strerror(err))
        if rc == DG_ERR_OVERFLOW:
            raise OverflowError("a sample does not fit in int64; pass dtype=object "
                                "to get exact Python ints")
        if rc == DG_ERR_LIMIT:
            raise RuntimeError("a rejection loop counter reached 2**64 - 1")
        if rc == DG_ERR_EXHAUSTED:
            raise _sources.Exhausted(self.pending_request())
        if rc == DG_ERR_RESTART:
            raise _sources.Restart()
        if rc == DG_ERR_RAW_BITS:
            raise RuntimeError("a sampler read raw bits in decision mode")
        if rc == DG_ERR_DECISION:
            raise ValueError("a decision tape outcome is outside its primitive's range")
        if rc == DG_ERR_CALLBACK:
            raise self.error
        raise RuntimeError(f"dgauss core failed with status {rc}")

    cdef object pending_request(self):
        """What the primitive that exhausted a decision tape asked for (None for bits)."""
        if self.s.rng.decider == NULL:
            return None
        if self.decider.want == DG_WANT_UNIFORM:
            return ("uniform", mpz_to_int(self.decider.want_a))
        if self.decider.want == DG_WANT_BERNOULLI_EXP:
            return ("bernoulli_exp", Fraction(mpz_to_int(self.decider.want_a),
                                              mpz_to_int(self.decider.want_b)))
        return ("bernoulli", Fraction(mpz_to_int(self.decider.want_a), mpz_to_int(self.decider.want_b)))

    cdef int reserve_vals(self, Py_ssize_t count) except -1:
        """At least `count` initialised GMP integers in vals (kept for the job's next runs)."""
        cdef Py_ssize_t k
        cdef mpz_t *grown
        if count <= self.nvals:
            return 0
        grown = <mpz_t *>realloc(self.vals, count * sizeof(mpz_t))
        if grown == NULL:
            raise MemoryError()
        self.vals = grown
        for k in range(self.nvals, count):
            mpz_init(self.vals[k])
        self.nvals = count
        return 0

    cdef bint stretch_ended(self) except -1:
        """At the end of a stretch, with the GIL: raise for a signal (Ctrl-C: KeyboardInterrupt
        on the main thread), and whether the batch must end anyway (a worker's slices
        stopped by another thread's error or Ctrl-C: the rest of its slice stays unfilled)."""
        PyErr_CheckSignals()
        return self.halt is not None and self.halt.stopped

    cdef int run(self, cnp.ndarray out) except -1:
        cdef Py_ssize_t n = out.shape[0], i = 0, m, k, done = 0
        cdef int rc = DG_OK
        cdef object[:] po
        cdef int typenum = cnp.PyArray_TYPE(out)
        if typenum != cnp.NPY_OBJECT:
            return self.run_into(<char *>cnp.PyArray_DATA(out), n, typenum == cnp.NPY_BOOL)
        po = out
        self.reserve_vals(min(self.obj_chunk, n))
        while i < n and rc == DG_OK:
            m = min(self.nvals, n - i)
            self.reserve()
            with nogil:
                rc = fill_mpz(&self.s, self.vals, m, &done)
            if rc == DG_OK:
                for k in range(done):
                    po[i + k] = mpz_to_int(self.vals[k])
            i += done
            if self.stretch_ended():
                break
        if rc != DG_OK:
            self.raise_status(rc)
        return 0

    cdef int run_into(self, char *data, Py_ssize_t n, bint is_bool) except -1:
        """Fill n int64 (or bool) values at `data`, in chunks, the GIL released for each;
        a large batch reads its source ahead on a thread of its own (start_ahead)."""
        cdef Py_ssize_t i = 0, m, done = 0
        cdef Py_ssize_t item = 1 if is_bool else 8
        cdef int rc = DG_OK
        cdef dg_ahead *ahead = self.start_ahead(n)
        try:
            while i < n and rc == DG_OK:
                m = min(CHUNK, n - i)
                self.reserve()
                with nogil:
                    if self.s.inversion and self.s.mu_small and not is_bool:
                        rc = fill_inversion(&self.s, <int64_t *>(data + i * item), m, &done)
                    else:
                        rc = fill_native(&self.s, data + i * item, is_bool, m, &done)
                i += done
                if self.stretch_ended():
                    break
        finally:
            self.stop_ahead(ahead)
        if rc != DG_OK:
            self.raise_status(rc)
        return 0

    cdef dg_ahead *start_ahead(self, Py_ssize_t n):
        """For a batch of at least READ_AHEAD_FROM samples of a job that may (ahead_ok: one
        call's own stream of the OS, not a worker's slices), on a machine where this process
        has two CPUs or more and one of them idle (dg_ahead_idle_cpu): a reader thread
        filling the job's streams from their source while the batch computes
        (csrc/dg_ahead.h), or NULL (the streams read their source themselves).  Both lanes take their next words from it, in order.  It reads ahead
        about the words the batch needs at the job's last rate, a quarter more (unlimited
        before a first call), then only as asked."""
        global _ahead_runs
        cdef dg_ahead *ahead
        cdef uint64_t rate, expected = UINT64_MAX
        if not self.ahead_ok or READ_AHEAD_FROM < 0 or n < READ_AHEAD_FROM:
            return NULL
        if not (dg_ahead_idle_cpu() or READ_AHEAD_BUSY and dg_ahead_cpus() >= 2):
            return NULL
        rate = self.last_bits // self.last_samples + 1 if self.last_samples > 0 else 0
        if 0 < rate < (<uint64_t>1 << 24) and <uint64_t>n < (<uint64_t>1 << 32):
            expected = rate * <uint64_t>n * 5 // (4 * 64)
        ahead = dg_ahead_start(self.s.rng.fill, self.s.rng.ctx, expected)
        if ahead != NULL:
            _ahead_runs += 1
            self.own_fill, self.own_ctx = self.s.rng.fill, self.s.rng.ctx
            self.s.rng.fill, self.s.rng.ctx = dg_fill_ahead, ahead
            if self.s.lanes:
                self.own_fill2, self.own_ctx2 = self.s.rng2.fill, self.s.rng2.ctx
                self.s.rng2.fill, self.s.rng2.ctx = dg_fill_ahead, ahead
        return ahead

    cdef void stop_ahead(self, dg_ahead *ahead):
        """Stop start_ahead's reader (NULL: none) and point the streams back at their own
        source: the words read ahead and not used are dropped (zeroed), as a stream's unread
        words are when its call ends."""
        if ahead == NULL:
            return
        self.s.rng.fill, self.s.rng.ctx = self.own_fill, self.own_ctx
        if self.s.lanes:
            self.s.rng2.fill, self.s.rng2.ctx = self.own_fill2, self.own_ctx2
        with nogil:
            dg_ahead_stop(ahead)
