"""Offering an accounting release to an Accountant through the public API (shared by the
Accountant's tests)."""

from dgauss.accounting import L2Ball, Laplace


def values_for(release) -> list[int]:
    """Zeros to noise, enough that a Gaussian ℓ2 ball is charged whole (the Accountant cuts
    a ball to as many coordinates as a release noises)."""
    sens = release.sensitivity
    return [0] * (sens.radius**2 if isinstance(sens, L2Ball) else 1)


def sensitivity_of(release):
    """What a mechanism takes to make ``release``: an ℓ2 ball as itself, a Gaussian vector
    as a list (even of one entry: [2] is not the ball 2), a Laplace Δ as an int."""
    sens = release.sensitivity
    if isinstance(sens, L2Ball):
        return sens
    return sens[0] if len(sens) == 1 and isinstance(release, Laplace) else list(sens)
