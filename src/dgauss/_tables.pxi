# Included by _core.pyx.  The tables: Algorithm 2's digits of exp(-H 2^r / t), the inversion
# tables (plain, blocked and enveloped) with their exact fall-backs from dgauss._inversion,
# the per-parameter cache, and the entry points the tests use to check them.

_EXP_E = {}     # (t, r) -> floor(2**128 exp(-2**r / t)), the base of Algorithm 2's tables
_EXP_E_MAX = 256


cdef object _exp_e(object t, unsigned long r):
    """floor(2**128 exp(-2**r / t)) (GMP), remembered for the last few (t, r)."""
    cdef mpz_t z, n, d
    e = _EXP_E.get((t, r))
    if e is None:
        mpz_init(z)
        mpz_init(n)
        mpz_init(d)
        try:
            mpz_set_ui(n, 1)
            mpz_mul_2exp(n, n, r)
            int_to_mpz(d, t)
            dg_exp_neg_floor_mpz(z, n, d, 128)
            e = mpz_to_int(z)
        finally:
            mpz_clear(z)
            mpz_clear(n)
            mpz_clear(d)
        if len(_EXP_E) >= _EXP_E_MAX:
            _EXP_E.clear()
        _EXP_E[(t, r)] = e
    return e


#: Algorithm 2 draws U's top HIGH_BITS bits H first and its low bits L last.
HIGH_BITS = 12


def split_bits(t, high_bits=HIGH_BITS):
    """r, the number of U's low bits that Algorithm 2 reads last, for t >= 1 (with U's top
    `high_bits` bits first; tests lower it to split small t)."""
    if not 1 <= high_bits <= HIGH_BITS:
        raise ValueError(f"high_bits must be in [1, {HIGH_BITS}], got {high_bits!r}")
    return max(0, (t - 1).bit_length() - high_bits)


cdef uint64_t *_laplace_setup(LaplaceParams *lp, object t, unsigned long high_bits,
                              bint fixed_point) except NULL:
    """U = H 2**r + L and the table of D's first factor: returns its `blocks` words (zeroed,
    filled on first use), which the caller frees."""
    cdef uint64_t *words
    r = split_bits(t, high_bits)        # Python ints here: r may pass 64
    lp.r = r
    lp.blocks = ((t - 1) >> r) + 1
    if r == 0:
        lp.t_k = (t - 1).bit_length()                   # t > INVERSION_MAX >= 2: k >= 1
        lp.t_p = (t - 1) << (64 - lp.t_k)
    if r > 0 and not lp.t_small:
        lp.split.r = r
        lp.split.kh = (t - 1).bit_length() - r
        lp.split.top = lp.blocks - 1
        int_to_mpz(lp.split.low_digits, (t - 1) & ((1 << r) - 1))
    e = _exp_e(t, r)
    words = <uint64_t *>calloc(lp.blocks, sizeof(uint64_t))
    if words == NULL:
        raise MemoryError()
    dg_exp_table_init(&lp.exp_h, lp.T, r, e >> 64, e & 0xFFFFFFFFFFFFFFFF, words, fixed_point)
    return words


def exp_neg_floor(uint64_t n, uint64_t d, unsigned long k):
    """floor(2**k exp(-n/d)) for n >= 0, d >= 1, n/d <= 2**16 (for tests of the digits the core uses)."""
    cdef mpz_t z
    if d == 0 or n // d > 2**16:
        raise ValueError("need n >= 0, d >= 1, n/d <= 2**16")
    mpz_init(z)
    dg_exp_neg_floor(z, n, d, k)
    v = mpz_to_int(z)
    mpz_clear(z)
    return v


def exp_neg_prefix(n, d, bint fixed_point=True):
    """floor(2**64 exp(-n/d)) for integers 0 < n <= d, as the core computes it (128-bit
    fixed point, GMP when that cannot decide, or GMP alone when not fixed_point; words or
    GMP integers): for tests."""
    cdef mpz_t zn, zd
    if not 0 < n <= d:
        raise ValueError("need 0 < n <= d")
    if d < 2**64:
        return dg_exp_neg_prefix(n, d, fixed_point)
    mpz_init(zn)
    mpz_init(zd)
    try:
        int_to_mpz(zn, n)
        int_to_mpz(zd, d)
        return dg_exp_neg_prefix_mpz(zn, zd, fixed_point)
    finally:
        mpz_clear(zn)
        mpz_clear(zd)


cdef inline dg_u128 _u128(v):
    return (<dg_u128>(<uint64_t>(v >> 64)) << 64) | <uint64_t>(v & 0xFFFFFFFFFFFFFFFF)


def exp_neg_prefix_fix(x_fix, slack=1):
    """The fixed-point step alone: floor(2**64 exp(-x)) for every x in
    [x_fix, x_fix + slack) / 2**128, or None when it cannot decide: for tests."""
    cdef uint64_t w
    if not 0 <= x_fix < 2**128:
        raise ValueError("x_fix must be in [0, 2**128)")
    if not 1 <= slack < 2**128:
        raise ValueError("slack must be in [1, 2**128)")
    if dg_exp_neg_prefix_fix(_u128(x_fix), _u128(slack), &w):
        return w
    return None


def geometric_thresholds(uint64_t t, bint fixed_point=True):
    """Algorithm 2's inversion thresholds floor(2**64 exp(-x/t)), x = 1 .. K (the last
    non-zero), as the core computes them (fixed point with a GMP fallback, or GMP alone
    when not fixed_point): for tests."""
    cdef dg_geometric_table g
    cdef uint64_t *thr
    if not 1 <= t <= DG_INVERSION_MAX:
        raise ValueError(f"t must be in [1, {DG_INVERSION_MAX}]")
    thr = <uint64_t *>malloc(dg_geometric_table_size(t) * sizeof(uint64_t))
    if thr == NULL:
        raise MemoryError()
    try:
        e = _exp_e(t, 0)
        dg_geometric_table_init(&g, t, e >> 64, e & 0xFFFFFFFFFFFFFFFF, thr, fixed_point)
        return [thr[x] for x in range(1, g.count + 1)]
    finally:
        free(thr)


def exp_table(t, h_values, bint fixed_point=True):
    """The words floor(2**64 exp(-H 2**r / t)) of Algorithm 2's table for t (r = split_bits(t))
    at the given H (1 <= H < blocks), as the core computes them (fixed point with a GMP
    fallback, or GMP alone when not fixed_point): for tests."""
    cdef LaplaceParams lp
    cdef uint64_t *words = NULL
    if not t > DG_INVERSION_MAX:
        raise ValueError(f"t must be above {DG_INVERSION_MAX}")
    mpz_init(lp.T)
    mpz_init(lp.split.low_digits)
    try:
        int_to_mpz(lp.T, t)
        lp.t_small = _fits_word(lp.T)
        words = _laplace_setup(&lp, t, HIGH_BITS, fixed_point)
        out = []
        for h in h_values:
            if not 1 <= h < lp.blocks:
                raise ValueError(f"H must be in [1, {lp.blocks})")
            out.append(dg_exp_table_prefix(&lp.exp_h, h))
        return out
    finally:
        mpz_clear(lp.T)
        mpz_clear(lp.split.low_digits)
        free(words)

class _BitsFailed(Exception):
    """The bit source failed under a Python step (its status says why)."""


cdef class _RngBits:
    """bit() for dgauss._inversion: the next bit of one call's stream (the GIL held)."""
    cdef dg_rng *rng

    def __call__(self):
        cdef int b = dg_bit(self.rng)
        if self.rng.status != DG_OK:
            raise _BitsFailed()
        return b


cdef class _InvTable:
    """The words and guide of one parameter's inversion table (arrays the C table points into)."""
    cdef readonly object thr, guide
    cdef readonly uint64_t count
    cdef readonly unsigned guide_bits
    cdef readonly bint fixed_point     # the words came from dg_gauss_words (else _inversion)

    @property
    def nbytes(self):
        return self.thr.nbytes + self.guide.nbytes


#: Inversion tables by (sigma^2, fixed_point), least recently used first, at most
#: INV_CACHE_BYTES in all: built once per parameter, shared by threads and calls.
_INV_TABLES = OrderedDict()
_INV_LOCK = _threading.Lock()
INV_CACHE_BYTES = 64 << 20


cdef dg_u128 _exp_floor_128(object n, object d) except? 0:
    """floor(2**128 exp(-n/d)) (GMP), or 0 when exp(-n/d) < 2**-128 (n/d >= 0.7 * 128)."""
    cdef mpz_t z, a, b
    if 10 * n >= 7 * 128 * d:
        return 0
    mpz_init(z)
    mpz_init(a)
    mpz_init(b)
    try:
        int_to_mpz(a, n)
        int_to_mpz(b, d)
        dg_exp_neg_floor_mpz(z, a, b, 128)
        return _u128(mpz_to_int(z))
    finally:
        mpz_clear(z)
        mpz_clear(a)
        mpz_clear(b)


cdef object _words_fixed(object key):
    """A table's words (thr[0] .. thr[K + 1]) in 128-bit fixed point (dg_gauss_words,
    dg_laplace_direct_words), or None where that does not apply or cannot decide a word."""
    cdef cnp.ndarray thr
    cdef int64_t count
    cdef dg_u128 e, q
    cdef uint64_t n = 0, d = 0, cap
    cdef uint64_t *words
    family, num, den = key[0], key[1], key[2]
    if not (num < 2**62 and den < 2**62):
        return None
    n, d = num, den
    if family == "gaussian":
        if num > den << 24:
            return None
        e = _exp_floor_128(den, 2 * num)
        q = _exp_floor_128(den, num)
        cap = 16 * (_math.isqrt(num // den) + 1) + 64
        thr = np.empty(cap, dtype=np.uint64)
        words = <uint64_t *>cnp.PyArray_DATA(thr)
        with nogil:
            count = dg_gauss_words(n, d, e, q, 2, words, cap)
        if count < 0:
            return None
    else:
        # T_x = 2 exp(-x/scale) / (1 + p) is below 2**-64 when x/scale >= 46 (> 65 ln 2)
        cap = 46 * (num // den + 1)
        e = _exp_floor_128(den, num)                        # p = exp(-1/scale), scale = num/den
        thr = np.empty(cap + 2, dtype=np.uint64)
        words = <uint64_t *>cnp.PyArray_DATA(thr)
        with nogil:
            count = dg_laplace_direct_words(n, d, e, cap, words)
    return thr[:count + 2].copy()


cdef object _floors(object key):
    """The same words from dgauss._inversion's exact integer bounds."""
    family, num, den = key[0], key[1], key[2]
    if family == "gaussian":
        return _inversion.gaussian_floors(Fraction(num, den), 64).words
    floors = _inversion.LaplaceFloors(Fraction(num, den), 64)
    return [floors.word(x) for x in range(1, floors.first_at_most(0))]


cdef class _BlockedTable:
    """The tables of a blocked inversion (dg_blocked, docs/contract.md item 9): the first step's
    words `thr` and its guide; the discrete Laplace's one residual `rthr` and its guide, or the
    discrete Gaussian's residual of each block, `rwords` (block b's L words at b L); L = 2**k,
    `nb` blocks (None: no end), the Laplace's `cut` c."""
    cdef readonly object thr, guide, rthr, rguide, rwords, nb
    cdef readonly uint64_t count, k, cut
    cdef readonly unsigned guide_bits, rguide_bits
    cdef readonly bint fixed_point     # the words came from 128-bit fixed point (and GMP)

    @property
    def nbytes(self):
        return sum(a.nbytes for a in (self.thr, self.guide, self.rthr, self.rguide, self.rwords)
                   if a is not None)

    cdef void attach(self, dg_blocked *lb):
        """Points lb into the arrays (the guides were filled when the table was built)."""
        memset(lb, 0, sizeof(dg_blocked))
        dg_inv_attach(&lb.stage, <const uint64_t *>cnp.PyArray_DATA(self.thr), self.count,
                      <const unsigned int *>cnp.PyArray_DATA(self.guide), 64 - self.guide_bits)
        if self.rwords is None:
            dg_inv_attach(&lb.resid, <const uint64_t *>cnp.PyArray_DATA(self.rthr),
                          (1 << self.k) - 1, <const unsigned int *>cnp.PyArray_DATA(self.rguide),
                          64 - self.rguide_bits)
            lb.rwords = NULL
            lb.nb = UINT64_MAX
        else:
            lb.rwords = <const uint64_t *>cnp.PyArray_DATA(self.rwords)
            lb.rcount = (1 << self.k) - 2
            lb.nb = self.nb
        lb.k = <unsigned>self.k

    cdef void set_stage(self, object thr):
        """The first step's words (thr[0] = 2**64 - 1 .. thr[K + 1] = 0) and their guide."""
        cdef dg_inv_table scratch
        self.thr = thr
        self.count = thr.size - 2
        self.guide_bits = BLOCKED_GUIDE_BITS
        self.guide = np.empty(1 << self.guide_bits, dtype=np.uint32)
        dg_inv_init(&scratch, <const uint64_t *>cnp.PyArray_DATA(self.thr), self.count,
                    <unsigned int *>cnp.PyArray_DATA(self.guide), self.guide_bits)


cdef object _aligned_u128(Py_ssize_t count):
    """An array of `count` dg_u128 (as pairs of uint64), 16-byte aligned."""
    a = np.empty(2 * count, dtype=np.uint64)
    if cnp.PyArray_DATA(a) == NULL or (<size_t>cnp.PyArray_DATA(a)) % 16:
        raise MemoryError("an inversion table is not 16-byte aligned")
    return a


cdef _BlockedTable _laplace_blocked_table(object num, object den, bint fixed_point):
    """The _BlockedTable of Lap_Z(0, num/den), LAPLACE_BLOCKED_MIN <= num/den <= 2**20: its words
    by dg_lap_blocked_words (num, den < 2**62 and fixed_point), or where that cannot decide
    one, from dgauss._inversion's exact bounds."""
    cdef _BlockedTable g = _BlockedTable.__new__(_BlockedTable)
    cdef dg_inv_table scratch
    cdef int64_t count = -1
    cdef uint64_t n, d, cap, c
    cdef unsigned k
    cdef dg_u128 e1, pl
    cdef uint64_t *thr_p
    cdef uint64_t *rthr_p
    cdef dg_u128 *pu_p
    scale = Fraction(num, den)
    k, c = _methods.laplace_blocks(scale)
    big_l = 1 << k
    g.k, g.cut, g.nb = k, c, None
    cap = 2 * 46 * (num // (den * big_l) + 1) + 4
    thr = np.empty(cap, dtype=np.uint64)
    rthr = np.empty(big_l + 1, dtype=np.uint64)
    if fixed_point and num < 2**62 and den < 2**62:
        n, d = num, den
        e1 = _exp_floor_128(den, num)
        pl = _exp_floor_128(den << k, num)
        pu = _aligned_u128(big_l + 1)
        thr_p = <uint64_t *>cnp.PyArray_DATA(thr)
        rthr_p = <uint64_t *>cnp.PyArray_DATA(rthr)
        pu_p = <dg_u128 *>cnp.PyArray_DATA(pu)
        with nogil:
            count = dg_lap_blocked_words(n, d, e1, pl, k, c, thr_p, cap, rthr_p, pu_p)
        if count == -2:
            raise RuntimeError("dg_lap_blocked_words ran out of room (a bug: cap is too small)")
    g.fixed_point = count >= 0
    if count >= 0:
        thr = thr[:count + 2].copy()
    else:
        floors = _inversion.LaplaceFloors(scale, 64, blocks=(k, c))
        thr = np.array([2**64 - 1, *[floors.word(s) for s in range(1, floors.first_at_most(0))], 0],
                       dtype=np.uint64)
        rthr = np.array([2**64 - 1, *_inversion.residual_floors(scale, 64).words, 0],
                        dtype=np.uint64)
    g.set_stage(thr)
    g.rthr = rthr
    g.rguide_bits = min(dg_inv_guide_bits(big_l - 1), <unsigned>RESIDUAL_GUIDE_BITS)
    g.rguide = np.empty(1 << g.rguide_bits, dtype=np.uint32)
    dg_inv_init(&scratch, <const uint64_t *>cnp.PyArray_DATA(g.rthr), big_l - 1,
                <unsigned int *>cnp.PyArray_DATA(g.rguide), g.rguide_bits)
    return g


cdef _BlockedTable _gauss_blocked_table(object num, object den, bint fixed_point):
    """The _BlockedTable of N_Z(0, num/den), GAUSSIAN_BLOCKED_MIN <= num/den <= 2**24: its words
    by dg_gauss_blocked_words (num, den < 2**62 and fixed_point), or where that cannot decide
    a first-step word, from dgauss._inversion's exact bounds."""
    cdef _BlockedTable g = _BlockedTable.__new__(_BlockedTable)
    cdef int64_t count = -1
    cdef uint64_t n, d, cap, nb, tcap
    cdef unsigned k
    cdef dg_u128 e, q
    cdef uint64_t *thr_p
    cdef uint64_t *rw_p
    cdef dg_u128 *tlo_p
    cdef dg_u128 *thi_p
    sigma2 = Fraction(num, den)
    k, nb = _methods.gaussian_blocks(sigma2)
    big_l = 1 << k
    g.k, g.cut, g.nb = k, 0, nb
    root = _math.isqrt(num // den) + 1
    cap = 2 * nb + 12 * root + 64
    tcap = 12 * root + 64
    thr = np.empty(cap, dtype=np.uint64)
    rwords = np.empty(nb * big_l, dtype=np.uint64)
    if fixed_point and num < 2**62 and den < 2**62:
        n, d = num, den
        e = _exp_floor_128(den, 2 * num)
        q = _exp_floor_128(den, num)
        tlo, thi = _aligned_u128(tcap), _aligned_u128(tcap)
        thr_p = <uint64_t *>cnp.PyArray_DATA(thr)
        rw_p = <uint64_t *>cnp.PyArray_DATA(rwords)
        tlo_p = <dg_u128 *>cnp.PyArray_DATA(tlo)
        thi_p = <dg_u128 *>cnp.PyArray_DATA(thi)
        with nogil:
            count = dg_gauss_blocked_words(n, d, e, q, k, nb, thr_p, cap, rw_p, tlo_p, thi_p, tcap)
        if count == -2:
            raise RuntimeError("dg_gauss_blocked_words ran out of room (a bug: cap is too small)")
    g.fixed_point = count >= 0
    if count >= 0:
        thr = thr[:count + 2].copy()
    else:
        thr = np.array(
            [2**64 - 1, *_inversion.gaussian_floors(sigma2, 64, blocks=(k, nb)).words, 0],
            dtype=np.uint64)
        for b in range(nb):
            rwords[b * big_l:(b + 1) * big_l] = [
                2**64 - 1, *_inversion.gaussian_residual_floors(sigma2, b, 64).words, 0]
    g.set_stage(thr)
    g.rwords = rwords
    return g


cdef class _EnvTable:
    """The tables of enveloped inversion (dg_env, docs/contract.md item 9): the block index's
    one-sided words `thr` and their guide, and `ones`, J(b) for b = 0 .. count (the
    Laplace's the same for every b); L = 2**k."""
    cdef readonly object thr, guide, ones, cmul
    cdef readonly uint64_t count, k
    cdef readonly unsigned guide_bits, cshift
    cdef readonly bint fixed_point     # the words came from 128-bit fixed point (and GMP)
    cdef readonly bint gaussian

    @property
    def nbytes(self):
        return self.thr.nbytes + self.guide.nbytes + self.ones.nbytes

    cdef void attach(self, dg_env *ev):
        """Points ev into the arrays (the guide was filled when the table was built)."""
        memset(ev, 0, sizeof(dg_env))
        dg_inv_attach(&ev.stage, <const uint64_t *>cnp.PyArray_DATA(self.thr), self.count,
                      <const unsigned int *>cnp.PyArray_DATA(self.guide), 64 - self.guide_bits)
        ev.ones = <const uint8_t *>cnp.PyArray_DATA(self.ones)
        ev.k = <unsigned>self.k
        ev.gaussian = self.gaussian
        ev.cmul = _u128(self.cmul)
        ev.cshift = self.cshift


cdef object _env_words(object env, bint fixed_point):
    """The block index's words thr[0] .. thr[K + 1] of an Envelope: in 128-bit fixed point
    (dg_gauss_words one-sided, dg_geometric_words) with GMP for a word the bound leaves
    undecided, or None when dg_gauss_words cannot decide one."""
    cdef cnp.ndarray thr, undecided
    cdef int64_t count
    cdef uint64_t n, d, cap
    cdef dg_u128 e, q
    if not fixed_point:
        return None
    inner = env.inner
    if env.gaussian:
        # n/d >= inner, n, d < 2**62: only the bound on the sums' rest reads them
        d = 1 << 40
        n = -(-inner.numerator * d // inner.denominator)
        e = _exp_floor_128(inner.denominator, 2 * inner.numerator)
        q = _exp_floor_128(inner.denominator, inner.numerator)
        cap = 16 * (_math.isqrt(n // d) + 1) + 64
        thr = np.empty(cap, dtype=np.uint64)
        with nogil:
            count = dg_gauss_words(n, d, e, q, 1, <uint64_t *>cnp.PyArray_DATA(thr), cap)
        return None if count < 0 else thr[:count + 2].copy()
    # P[B >= x] = exp(-x/inner) is below 2**-64 when x/inner >= 45 (> 64 ln 2)
    cap = 45 * (inner.numerator // inner.denominator + 1)
    e = _exp_floor_128(inner.denominator, inner.numerator)
    thr = np.empty(cap + 2, dtype=np.uint64)
    undecided = np.zeros(cap + 2, dtype=np.uint8)
    with nogil:
        count = <int64_t>dg_geometric_words(e, cap, <uint64_t *>cnp.PyArray_DATA(thr),
                                            <uint8_t *>cnp.PyArray_DATA(undecided))
    for x in np.flatnonzero(undecided[1:count + 1]) + 1:
        thr[x] = _inversion.geometric_floor(inner, int(x), 64)
    while count > 0 and thr[count] == 0:   # an undecided last word may be 0
        count -= 1
    thr[count + 1] = 0
    return thr[:count + 2].copy()


cdef _EnvTable _env_table(object family, object num, object den, bint fixed_point):
    """The _EnvTable of N_Z(0, num/den) or Lap_Z(0, num/den) past blocked inversion's range:
    the words by _env_words, or from dgauss._inversion's exact bounds; J(b) for every b up to
    the table's count from closed-form breakpoints (J decreases in b)."""
    cdef _EnvTable g = _EnvTable.__new__(_EnvTable)
    cdef dg_inv_table scratch
    gaussian = family == "gaussian"
    env = _inversion.envelope(gaussian, Fraction(num, den))
    thr = _env_words(env, fixed_point)
    g.fixed_point = thr is not None
    if thr is None:
        floors = env.stage_floors(64)
        words = (floors.words if gaussian
                 else [floors.word(x) for x in range(1, floors.first_at_most(0))])
        thr = np.array([2**64 - 1, *words, 0], dtype=np.uint64)
    g.thr = thr
    g.count = thr.size - 2
    g.k = env.k
    g.guide_bits = ENV_GUIDE_BITS
    g.guide = np.empty(1 << g.guide_bits, dtype=np.uint32)
    dg_inv_init(&scratch, <const uint64_t *>cnp.PyArray_DATA(g.thr), g.count,
                <unsigned int *>cnp.PyArray_DATA(g.guide), g.guide_bits)
    if gaussian:
        g.ones = _gaussian_ones(env, g.count + 1)
    else:
        g.ones = np.full(g.count + 1, env.leading_ones(0), dtype=np.uint8)
    # gamma = m g, g = 1/(2 sigma^2) = d/(2n) or 1/scale = d/n: cmul = floor(2**(128 + s) g)
    # in [2**127, 2**128), s the least with 2**(s + 1) gn >= gd
    g.gaussian = gaussian
    gn, gd = den, (2 * num if gaussian else num)
    shift = max(0, gd.bit_length() - gn.bit_length() - 1)
    while shift > 0 and gn << shift >= gd:
        shift -= 1
    while gn << (shift + 1) < gd:
        shift += 1
    g.cshift = shift
    g.cmul = (gn << (128 + shift)) // gd
    if not (1 <= shift <= 127 and 2**127 <= g.cmul < 2**128):  # not reached: g in [2**-102, 2**-20]
        raise RuntimeError(f"enveloped inversion's scale factor 2**-{shift} is out of range")
    return g


def _gaussian_ones(env, count):
    """J(b), b = 0 .. count - 1, of an Envelope of the Gaussian (dgauss._inversion's
    Envelope.leading_ones): J(b) >= j exactly when 2**j (L - 1)(2Lb + L - 1) <= 2 sigma^2,
    that is b <= (2 sigma^2 / (2**j (L - 1)) - (L - 1)) / (2L), for j = 1 .. MAX_LEADING_ONES."""
    big_l = 1 << env.k
    n, d = env.param.numerator, env.param.denominator
    ones = np.zeros(count, dtype=np.uint8)
    for j in range(1, _inversion.MAX_LEADING_ONES + 1):
        # the largest b with 2**j (L - 1)(2Lb + L - 1) d <= 2n, or -1 if none
        top = (2 * n // ((1 << j) * (big_l - 1) * d) - (big_l - 1))
        last = top // (2 * big_l) if top >= 0 else -1
        if last < 0:
            break
        ones[:min(last + 1, count)] = j
    return ones


cdef object inv_table(object key, bint fixed_point):
    """The inversion table for key = ("gaussian", n, d) or ("laplace", n, d) (cached): words
    by 128-bit fixed point where that decides them, else from dgauss._inversion;
    fixed_point=False takes them all from there (the same words, for tests).  A Laplace
    of scale at least LAPLACE_BLOCKED_MIN, or a Gaussian of sigma^2 at least
    GAUSSIAN_BLOCKED_MIN, gets a _BlockedTable."""
    cdef _InvTable tab
    cdef dg_inv_table scratch
    key = (*key, fixed_point)
    with _INV_LOCK:
        found = _INV_TABLES.get(key)
        if found is not None:
            _INV_TABLES.move_to_end(key)
            return found
    param = Fraction(key[1], key[2])
    if param > (_methods.GAUSSIAN_BLOCKED_MAX if key[0] == "gaussian"
                else _methods.LAPLACE_BLOCKED_MAX):
        enveloped = _env_table(key[0], key[1], key[2], fixed_point)
        _cache(key, enveloped)
        return enveloped
    if key[0] == "laplace" and param >= _methods.LAPLACE_BLOCKED_MIN:
        blocked = _laplace_blocked_table(key[1], key[2], fixed_point)
        _cache(key, blocked)
        return blocked
    if key[0] == "gaussian" and param >= _methods.GAUSSIAN_BLOCKED_MIN:
        blocked = _gauss_blocked_table(key[1], key[2], fixed_point)
        _cache(key, blocked)
        return blocked
    thr = _words_fixed(key) if fixed_point else None
    tab = _InvTable.__new__(_InvTable)
    tab.fixed_point = thr is not None
    if thr is None:
        thr = np.array([2**64 - 1, *_floors(key), 0], dtype=np.uint64)
    tab.thr = thr
    tab.count = thr.size - 2
    if tab.count > DG_GUIDE_MAX_COUNT:     # not reached: dgauss._methods.resolve bounds the tables
        raise RuntimeError(f"an inversion table of {tab.count} words is too long for its guide")
    tab.guide_bits = dg_inv_guide_bits(tab.count)
    tab.guide = np.empty(1 << tab.guide_bits, dtype=np.uint32)
    dg_inv_init(&scratch, <const uint64_t *>cnp.PyArray_DATA(thr), tab.count,
                <unsigned int *>cnp.PyArray_DATA(tab.guide), tab.guide_bits)
    _cache(key, tab)
    return tab


cdef _cache(object key, object table):
    """Keeps `table` under `key`, dropping the least recently used past INV_CACHE_BYTES."""
    with _INV_LOCK:
        _INV_TABLES[key] = table
        total = sum(t.nbytes for t in _INV_TABLES.values())
        while total > INV_CACHE_BYTES and len(_INV_TABLES) > 1:
            total -= _INV_TABLES.popitem(last=False)[1].nbytes


def gauss_table(num, den, bint fixed_point=True):
    """The inversion table of N_Z(0, num/den)'s |X| (see inv_table): an _InvTable of every
    word, or from GAUSSIAN_BLOCKED_MIN on a _BlockedTable: for tests."""
    return inv_table(("gaussian", num, den), fixed_point)


def laplace_table(num, den, bint fixed_point=True):
    """The inversion table of Lap_Z(0, num/den)'s |X| (see inv_table): an _InvTable of every
    word, or from LAPLACE_BLOCKED_MIN on a _BlockedTable: for tests."""
    return inv_table(("laplace", num, den), fixed_point)


def inversion_word(num, den, uint64_t r, bint laplace=False, bint residual=False):
    """(bits needed or 65, the count of thresholds above r) that the table of N_Z(0, num/den)
    (or Lap_Z(0, num/den)) gives for R's 64 bits r; for blocked inversion, the first step's
    table, or with residual=True the Laplace's residual: for tests."""
    cdef dg_inv_table t
    cdef dg_blocked lb
    cdef uint64_t y
    table = laplace_table(num, den) if laplace else gauss_table(num, den)
    if isinstance(table, _BlockedTable):
        (<_BlockedTable>table).attach(&lb)
        if residual and lb.rwords != NULL:
            raise ValueError("a Gaussian's residuals are one per block: see _BlockedTable.rwords")
        need = dg_inv_word(&lb.resid if residual else &lb.stage, r, &y)
    else:
        tab = <_InvTable>table
        dg_inv_attach(&t, <const uint64_t *>cnp.PyArray_DATA(tab.thr), tab.count,
                      <const unsigned int *>cnp.PyArray_DATA(tab.guide), 64 - tab.guide_bits)
        need = dg_inv_word(&t, r, &y)
    return need, y


def laplace_word_exact(uint64_t num, uint64_t den, uint64_t x):
    """floor(2**64 T_x) of Lap_Z(0, num/den) by GMP alone (dg_laplace_word_exact, the fallback
    of the fixed-point words): for tests."""
    if den == 0 or num == 0 or x == 0:
        raise ValueError("need num, den, x >= 1")
    return dg_laplace_word_exact(num, den, x)


def gauss_resid_word_exact(uint64_t num, uint64_t den, uint64_t y0, unsigned k, uint64_t u):
    """floor(2**64 rho_{b,u}) of N_Z(0, num/den)'s blocked inversion, the residual of the block
    starting at y0 = 1 + Lb (L = 2**k), by GMP alone (dg_gauss_resid_word_exact, the fallback
    of the fixed-point words): for tests."""
    cdef uint64_t w = 0
    if num == 0 or den == 0 or y0 == 0 or not 2 <= k <= 16 or not 1 <= u <= (<uint64_t>1 << k) - 2:
        raise ValueError("need num, den, y0 >= 1, 2 <= k <= 16 and 1 <= u <= 2**k - 2")
    if dg_gauss_resid_word_exact(num, den, y0, k, u, &w) < 0:
        raise RuntimeError("the residual word was not decided with 2**16 bits")
    return w


def laplace_words(num, den, xs):
    """floor(2**64 T_x) for the x in xs as the table of Lap_Z(0, num/den), num/den below
    LAPLACE_BLOCKED_MIN, holds them (0 past its last word): for tests."""
    thr = (<_InvTable?>laplace_table(num, den)).thr
    return [int(thr[x]) if x < thr.size else 0 for x in xs]
