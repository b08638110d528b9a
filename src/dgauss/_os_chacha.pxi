# Included by _core.pyx.  The OS source's scripted lanes for tests, which reader the OS
# source uses, and the opt-in ChaCha20 state (csrc/dg_chacha.h).

cdef void _prefix(dg_os_script *script, cnp.ndarray words):
    """A ScriptedOS lane's first fake words (the source keeps the array alive)."""
    if words.size:
        script.prefix = <const uint64_t *>cnp.PyArray_DATA(words)
        script.nprefix = words.size


_OS_READERS = ("urandom", "getrandom(2)", "getrandom(3)", "vDSO getrandom")


def os_reader(which=None):
    """How the OS source reads: "vDSO getrandom" (the kernel's, Linux >= 6.11, called
    directly: the default where the kernel has it), "getrandom(3)" (the C library's for reads
    of up to 256 bytes, which from glibc 2.41 reads the vDSO, and the system call for larger
    ones), "getrandom(2)" (the system call) or "urandom".

    For tests and benchmarks, ``which`` sets it for the whole process first: "vDSO getrandom"
    (ValueError where there is none) or "getrandom(3)" (the reader without the vDSO's own
    function: "getrandom(3)", "getrandom(2)" or "urandom" as the system has them)."""
    cdef int got
    if which is not None:
        if which not in ("vDSO getrandom", "getrandom(3)"):
            raise ValueError(f"which must be 'vDSO getrandom' or 'getrandom(3)', not {which!r}")
        got = dg_os_set_reader(2 if which == "vDSO getrandom" else 1)
        if got < 0:
            raise ValueError("which='vDSO getrandom': this kernel has no vDSO getrandom")
        return _OS_READERS[got + 1]
    return _OS_READERS[dg_os_reader() + 1]


cdef extern from "dg_chacha.h" nogil:
    size_t dg_chacha_waiting(const dg_chacha *st)


cdef class ChaChaState:
    """One thread's state of a :class:`dgauss.ChaCha20` (csrc/dg_chacha.h): made unkeyed,
    keyed from the OS on first use.  Never shared between threads (the Python object keeps
    one per thread)."""
    cdef dg_chacha *st
    cdef dg_os_script script     # for tests: a scripted OS its keys come from (fail_keying)

    def __cinit__(self):
        self.st = dg_chacha_new()
        if self.st == NULL:
            raise MemoryError()

    def __dealloc__(self):
        dg_chacha_free(self.st)

    def forget(self):
        """Forget the key: the next fill keys afresh from the OS."""
        dg_chacha_forget(self.st)

    @property
    def keyed(self):
        return bool(self.st.keyed)

    @property
    def waiting(self):
        """Bytes of the last key's output not handed out yet (they wait in the state)."""
        return dg_chacha_waiting(self.st)

    @property
    def blocks_left(self):
        return self.st.blocks_left

    @blocks_left.setter
    def blocks_left(self, uint64_t value):  # for tests: bring the reseed near
        self.st.blocks_left = value

    def fail_keying(self, int errno_value):
        """For tests: the OS refuses its keys from now on (a scripted source failing with
        errno_value, through the loop the OS source reads with)."""
        memset(&self.script, 0, sizeof(self.script))
        self.script.fail_after = 0
        self.script.fail_count = 1 << 30
        self.script.fail_errno = errno_value
        self.st.key_fill = dg_fill_scripted
        self.st.key_ctx = &self.script

    def set_key(self, bytes key):
        """For tests: key it with these 32 bytes, as if the OS had given them."""
        cdef unsigned int words[8]
        if len(key) != 32:
            raise ValueError("key must be 32 bytes")
        for i in range(8):
            words[i] = int.from_bytes(key[4 * i:4 * i + 4], "little")
        dg_chacha_set_key(self.st, words)
        memset(words, 0, sizeof(words))

    def words(self, Py_ssize_t n):
        """For tests: the next n 64-bit words of this state's output."""
        out = np.zeros(n, dtype=np.uint64)
        cdef uint64_t *p = <uint64_t *>cnp.PyArray_DATA(out)
        cdef int rc
        with nogil:
            rc = dg_fill_chacha(self.st, p, <size_t>n)
        if rc != DG_OK:
            err = self.st.err or _errno.EIO
            raise OSError(err, "dgauss could not read randomness from the operating system: "
                          + _os.strerror(err))
        return out


def chacha20_blocks(bytes key, unsigned int counter, bytes nonce, Py_ssize_t nblocks):
    """For tests: ChaCha20 blocks (RFC 8439, section 2.3) as bytes."""
    cdef unsigned int k[8]
    cdef unsigned int nn[3]
    if len(key) != 32 or len(nonce) != 12 or nblocks < 0:
        raise ValueError("key must be 32 bytes, nonce 12, nblocks >= 0")
    for i in range(8):
        k[i] = int.from_bytes(key[4 * i:4 * i + 4], "little")
    for i in range(3):
        nn[i] = int.from_bytes(nonce[4 * i:4 * i + 4], "little")
    out = np.zeros(16 * nblocks, dtype=np.uint32)
    dg_chacha20_blocks(k, counter, nn, <unsigned int *>cnp.PyArray_DATA(out), <size_t>nblocks)
    return out.astype("<u4").tobytes()


def chacha_kernel(int which=-2):
    """For tests: the ChaCha20 block kernel the fills use (dg_chacha_kernel): 0 the
    portable one, 1 the AVX2 one; ``which`` 0 or 1 sets it (None when this CPU cannot run
    it), -1 puts back the default, -2 only asks.  Returns the kernel then in use."""
    found = dg_chacha_kernel(which)
    return None if found < 0 else found
