"""Complex elementary functions of pytato's OpenCL programs, with numpy's
results at special values.

numpy computes the complex functions with the C library's ``csqrt``,
``cexp``, ``clog``, ``csinh``, ..., which follow Annex G of the C99
standard at infinities, NaNs and signed zeros (``sqrt(-infj)`` is
``inf-infj``), and powers by its own algorithm (``npy_cpow``: ``z**0`` is
1, ``0**w`` is 0 for ``real(w) > 0`` and NaN otherwise, integral
exponents in (-100, 100) multiplied out, the rest ``exp(w log z)`` with
C99's multiplication that recovers infinities). pyopencl's complex library
(``cdouble_sqrt``, ...) uses textbook formulas that give NaNs there. The
functions here are pytato's own, written in OpenCL C for ``cfloat_t`` and
``cdouble_t``:

* the special values of Annex G (the cases it leaves unspecified as glibc,
  numpy's C library on Linux, resolves them);
* finite arguments by algorithms accurate to a few units in the last
  place: Kahan's formulas for the inverse functions and ``tanh``,
  ``log1p`` near the unit circle for ``log``, scaling where intermediate
  values would overflow.

The lowering (:mod:`pytato.target.loopy.lower.expressions`) calls them as
``_pt_c<name>`` (``_pt_csqrt``, ``_pt_carcsin``, ``_pt_cpow``,
``_pt_cdiv`` for every complex division, ...) on
complex operands; :class:`ComplexFunction` is their :mod:`loopy`
callable, and each call brings the definitions it needs as preambles.

.. autodata:: COMPLEX_FUNCTIONS
.. autoclass:: ComplexFunction
"""

from __future__ import annotations

import functools
import re
from typing import Any

import loopy as lp
import numpy as np
from constantdict import constantdict
from loopy.types import NumpyType


__all__ = ["COMPLEX_FUNCTIONS", "ComplexFunction"]


# {{{ OpenCL C sources

# Written once for a real type REAL and its complex type CPLX; the float
# and double versions substitute the names below (CNEW: the complex
# constructor, SFX: the suffix of the function names, K_*: constants).

_COMMON = r"""
static inline CPLX _pt_cmul_SFX(CPLX a, CPLX b)
{
    /* numpy's product (no recovery of infinities) */
    return CNEW(a.real * b.real - a.imag * b.imag,
                a.real * b.imag + a.imag * b.real);
}

static inline CPLX _pt_cmul_annexg_SFX(CPLX z, CPLX w)
{
    /* C99's product (G.5.1): infinities recovered from NaN results */
    REAL a = z.real, b = z.imag, c = w.real, d = w.imag;
    REAL ac = a * c, bd = b * d, ad = a * d, bc = b * c;
    REAL x = ac - bd, y = ad + bc;
    if (isnan(x) && isnan(y)) {
        int recalc = 0;
        if (isinf(a) || isinf(b)) {
            a = copysign(isinf(a) ? (REAL)1 : (REAL)0, a);
            b = copysign(isinf(b) ? (REAL)1 : (REAL)0, b);
            if (isnan(c)) c = copysign((REAL)0, c);
            if (isnan(d)) d = copysign((REAL)0, d);
            recalc = 1;
        }
        if (isinf(c) || isinf(d)) {
            c = copysign(isinf(c) ? (REAL)1 : (REAL)0, c);
            d = copysign(isinf(d) ? (REAL)1 : (REAL)0, d);
            if (isnan(a)) a = copysign((REAL)0, a);
            if (isnan(b)) b = copysign((REAL)0, b);
            recalc = 1;
        }
        if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {
            if (isnan(a)) a = copysign((REAL)0, a);
            if (isnan(b)) b = copysign((REAL)0, b);
            if (isnan(c)) c = copysign((REAL)0, c);
            if (isnan(d)) d = copysign((REAL)0, d);
            recalc = 1;
        }
        if (recalc) {
            x = INFINITY * (a * c - b * d);
            y = INFINITY * (a * d + b * c);
        }
    }
    return CNEW(x, y);
}

static inline CPLX _pt_cdiv_SFX(CPLX a, CPLX b)
{
    /* numpy's quotient (Smith's method) */
    REAL abs_br = fabs(b.real), abs_bi = fabs(b.imag);
    if (abs_br >= abs_bi) {
        if (abs_br == 0 && abs_bi == 0)
            return CNEW(a.real / abs_br, a.imag / abs_bi);
        REAL rat = b.imag / b.real;
        REAL scl = (REAL)1 / (b.real + b.imag * rat);
        return CNEW((a.real + a.imag * rat) * scl, (a.imag - a.real * rat) * scl);
    }
    REAL rat = b.real / b.imag;
    REAL scl = (REAL)1 / (b.imag + b.real * rat);
    return CNEW((a.real * rat + a.imag) * scl, (a.imag * rat - a.real) * scl);
}

static inline CPLX _pt_csqrt_SFX(CPLX z)
{
    REAL x = z.real, y = z.imag;
    if (isinf(y))
        return CNEW(INFINITY, y);
    if (isnan(x))
        return CNEW(x, x);
    if (isinf(x)) {
        if (isnan(y))
            return x > 0 ? CNEW(x, y) : CNEW(y, INFINITY);
        return x > 0 ? CNEW(x, copysign((REAL)0, y))
                     : CNEW((REAL)0, copysign(INFINITY, y));
    }
    if (isnan(y))
        return CNEW(y, y);
    if (x == 0 && y == 0)
        return CNEW((REAL)0, y);
    REAL ax = fabs(x), ay = fabs(y), scale = 1;
    if (ax > K_MAX / 4 || ay > K_MAX / 4) {
        ax *= (REAL)0.25; ay *= (REAL)0.25; scale = 2;
    } else if (ax < K_SQRT_TINY && ay < K_SQRT_TINY) {
        ax *= K_SQRT_UP; ay *= K_SQRT_UP; scale = K_SQRT_DOWN;
    }
    REAL t = sqrt((ax + hypot(ax, ay)) * (REAL)0.5);
    REAL u = ay / (2 * t);
    if (x >= 0)
        return CNEW(t * scale, copysign(u * scale, y));
    return CNEW(u * scale, copysign(t * scale, y));
}

static inline CPLX _pt_cexp_SFX(CPLX z)
{
    REAL x = z.real, y = z.imag;
    if (isfinite(x)) {
        if (!isfinite(y))
            return CNEW(NAN, NAN);
        if (y == 0)
            return CNEW(exp(x), y);
        REAL c = cos(y), s = sin(y);
        if (x > K_EXP_MAX) {
            REAL h = exp(x * (REAL)0.5);
            return CNEW(h * c * h, h * s * h);
        }
        REAL e = exp(x);
        return CNEW(e * c, e * s);
    }
    if (isinf(x)) {
        if (x > 0) {
            if (y == 0)
                return CNEW(x, y);
            if (isfinite(y))
                return CNEW(x * cos(y), x * sin(y));
            return CNEW(x, NAN);
        }
        if (isfinite(y))
            return CNEW(copysign((REAL)0, cos(y)), copysign((REAL)0, sin(y)));
        return CNEW((REAL)0, copysign((REAL)0, y));
    }
    if (y == 0)
        return CNEW(x, y);
    return CNEW(x, NAN);
}

static inline CPLX _pt_clog_SFX(CPLX z)
{
    REAL x = z.real, y = z.imag;
    REAL ax = fabs(x), ay = fabs(y);
    REAL big = fmax(ax, ay), small = fmin(ax, ay);
    REAL re;
    if (isinf(ax) || isinf(ay))
        re = INFINITY;
    else if (isnan(ax) || isnan(ay))
        re = NAN;
    else if (big > K_MAX / 2)
        re = log(hypot(x * (REAL)0.5, y * (REAL)0.5)) + K_LN2;
    else if (big >= (REAL)0.5 && big <= (REAL)2 && small < (REAL)1.5
             && (big - 1) * (big + 1) + small * small <= (REAL)0.5
             && (big - 1) * (big + 1) + small * small >= (REAL)-0.5) {
        /* near the unit circle: log1p of x*x + y*y - 1, computed from
           exact products and sums (Dekker, Knuth) so that its relative
           accuracy, and the real part's, is kept */
        REAL px = big * big, ex = fma(big, big, -px);
        REAL py = small * small, ey = fma(small, small, -py);
        REAL a = px - 1, ab = a - px, ea = (px - (a - ab)) + (-1 - ab);
        REAL t = a + py, tb = t - a, et = (a - (t - tb)) + (py - tb);
        re = (REAL)0.5 * log1p(t + (et + ea + ex + ey));
    } else
        re = log(hypot(x, y));
    return CNEW(re, atan2(y, x));
}

static inline CPLX _pt_clog10_SFX(CPLX z)
{
    CPLX r = _pt_clog_SFX(z);
    return CNEW(r.real * K_LOG10E, r.imag * K_LOG10E);
}

static inline CPLX _pt_csinh_SFX(CPLX z)
{
    REAL x = z.real, y = z.imag;
    if (isfinite(x) && isfinite(y)) {
        if (y == 0)
            return CNEW(sinh(x), y);
        REAL c = cos(y), s = sin(y);
        if (fabs(x) > K_EXP_MAX) {
            REAL h = exp(fabs(x) * (REAL)0.5);
            return CNEW(copysign((REAL)1, x) * ((REAL)0.5 * h * c * h),
                        (REAL)0.5 * h * s * h);
        }
        return CNEW(sinh(x) * c, cosh(x) * s);
    }
    if (x == 0)
        return CNEW(x, NAN);
    if (isfinite(x))
        return CNEW(NAN, NAN);
    if (isinf(x)) {
        if (y == 0)
            return CNEW(x, y);
        if (isfinite(y))
            return CNEW(x * cos(y), INFINITY * sin(y));
        return CNEW(INFINITY, NAN);
    }
    if (y == 0)
        return CNEW(x, y);
    return CNEW(x, NAN);
}

static inline CPLX _pt_ccosh_SFX(CPLX z)
{
    REAL x = z.real, y = z.imag;
    if (isfinite(x) && isfinite(y)) {
        if (y == 0)
            return CNEW(cosh(x), copysign((REAL)0, x) * y);
        REAL c = cos(y), s = sin(y);
        if (fabs(x) > K_EXP_MAX) {
            REAL h = exp(fabs(x) * (REAL)0.5);
            return CNEW((REAL)0.5 * h * c * h,
                        copysign((REAL)1, x) * ((REAL)0.5 * h * s * h));
        }
        return CNEW(cosh(x) * c, sinh(x) * s);
    }
    if (x == 0)
        return CNEW(NAN, (REAL)0);
    if (isfinite(x))
        return CNEW(NAN, NAN);
    if (isinf(x)) {
        if (y == 0)
            return CNEW(INFINITY, copysign((REAL)0, x) * y);
        if (isfinite(y))
            return CNEW(INFINITY * cos(y), x * sin(y));
        return CNEW(INFINITY, NAN);
    }
    if (y == 0)
        return CNEW(x, y);
    return CNEW(x, NAN);
}

static inline CPLX _pt_ctanh_SFX(CPLX z)
{
    REAL x = z.real, y = z.imag;
    if (isinf(x))
        return CNEW(copysign((REAL)1, x),
                    isfinite(y) ? copysign((REAL)0, sin(2 * y))
                                : copysign((REAL)0, y));
    if (isnan(x))
        return CNEW(x, y == 0 ? y : NAN);
    if (!isfinite(y))
        return CNEW(x == 0 ? x : NAN, NAN);
    if (fabs(x) > K_TANH_BIG) {
        REAL e = exp(-2 * fabs(x));
        return CNEW(copysign((REAL)1, x), 4 * sin(y) * cos(y) * e);
    }
    /* Kahan's formula */
    REAL t = tan(y);
    REAL b = 1 + t * t;
    REAL s = sinh(x);
    REAL r = sqrt(1 + s * s);
    REAL d = 1 + b * s * s;
    return CNEW(b * r * s / d, t / d);
}

static inline CPLX _pt_csin_SFX(CPLX z)
{
    /* sin(z) = -i sinh(iz), but glibc's sin(x + i inf) for x infinite or
       NaN is NaN + i inf */
    if (isinf(z.imag) && !isfinite(z.real))
        return CNEW(NAN, INFINITY);
    CPLX r = _pt_csinh_SFX(CNEW(-z.imag, z.real));
    return CNEW(r.imag, -r.real);
}

static inline CPLX _pt_ccos_SFX(CPLX z)
{
    /* cos(z) = cosh(iz) */
    return _pt_ccosh_SFX(CNEW(-z.imag, z.real));
}

static inline CPLX _pt_ctan_SFX(CPLX z)
{
    /* tan(z) = -i tanh(iz) */
    CPLX r = _pt_ctanh_SFX(CNEW(-z.imag, z.real));
    return CNEW(r.imag, -r.real);
}

static inline CPLX _pt_casin_kahan_SFX(REAL x, REAL y)
{
    /* Kahan's arcsin of a finite z: sqrt(1-z) and sqrt(1+z) with signed
       zeros */
    CPLX s1 = _pt_csqrt_SFX(CNEW(1 - x, -y));
    CPLX s2 = _pt_csqrt_SFX(CNEW(1 + x, y));
    return CNEW(atan2(x, s1.real * s2.real - s1.imag * s2.imag),
                asinh(s1.real * s2.imag - s1.imag * s2.real));
}

static inline CPLX _pt_carcsinh_SFX(CPLX z)
{
    REAL x = z.real, y = z.imag;
    if (isnan(x)) {
        if (isinf(y))
            return CNEW(y, x);
        return CNEW(x, y == 0 ? y : NAN);
    }
    if (isnan(y)) {
        if (isinf(x))
            return CNEW(x, y);
        return CNEW(y, y);
    }
    if (isinf(x) || isinf(y))
        return CNEW(copysign(INFINITY, x),
                    copysign(isinf(x) ? (isinf(y) ? K_PI_4 : (REAL)0)
                                      : K_PI_2, y));
    if (fabs(x) > K_HUGE || fabs(y) > K_HUGE) {
        /* asinh(z) = log(2z) + O(1/z**2), for the half-plane of x >= 0 */
        CPLX l = _pt_clog_SFX(CNEW(fabs(x), y));
        return CNEW(copysign(l.real + K_LN2, x), l.imag);
    }
    /* asinh(z) = i asin(-iz) */
    CPLX r = _pt_casin_kahan_SFX(y, -x);
    return CNEW(-r.imag, r.real);
}

static inline CPLX _pt_carcsin_SFX(CPLX z)
{
    /* asin(z) = -i asinh(iz), but glibc's asin(+-inf + iNaN) is
       NaN + i inf */
    if (isinf(z.real) && isnan(z.imag))
        return CNEW(NAN, INFINITY);
    CPLX r = _pt_carcsinh_SFX(CNEW(-z.imag, z.real));
    return CNEW(r.imag, -r.real);
}

static inline CPLX _pt_carccos_SFX(CPLX z)
{
    REAL x = z.real, y = z.imag;
    if (isnan(x)) {
        if (isinf(y))
            return CNEW(x, -y);
        return CNEW(x, NAN);
    }
    if (isnan(y)) {
        if (isinf(x))
            return CNEW(y, -INFINITY);
        if (x == 0)
            return CNEW(K_PI_2, y);
        return CNEW(y, y);
    }
    if (isinf(x) || isinf(y)) {
        REAL re = isinf(y) ? (isinf(x) ? (x > 0 ? K_PI_4 : 3 * K_PI_4) : K_PI_2)
                           : (x > 0 ? (REAL)0 : K_PI);
        return CNEW(re, copysign(INFINITY, -y));
    }
    if (fabs(x) > K_HUGE || fabs(y) > K_HUGE) {
        /* acos(z) = -i log(2z) + O(1/z**2) for y >= 0, conjugated below */
        CPLX l = _pt_clog_SFX(CNEW(x, fabs(y)));
        return CNEW(l.imag, -copysign(l.real + K_LN2, y));
    }
    /* Kahan's formula */
    CPLX s1 = _pt_csqrt_SFX(CNEW(1 - x, -y));
    CPLX s2 = _pt_csqrt_SFX(CNEW(1 + x, y));
    return CNEW(2 * atan2(s1.real, s2.real),
                asinh(s2.real * s1.imag - s2.imag * s1.real));
}

static inline CPLX _pt_carctanh_SFX(CPLX z)
{
    REAL x = z.real, y = z.imag;
    if (isnan(x)) {
        if (isinf(y))
            return CNEW(copysign((REAL)0, x), copysign(K_PI_2, y));
        return CNEW(x, NAN);
    }
    if (isnan(y)) {
        if (isinf(x) || x == 0)
            return CNEW(copysign((REAL)0, x), y);
        return CNEW(y, y);
    }
    if (isinf(x) || isinf(y))
        return CNEW(copysign((REAL)0, x), copysign(K_PI_2, y));
    REAL ax = fabs(x);
    if (ax > K_HUGE || fabs(y) > K_HUGE) {
        /* atanh(z) = 1/z + i pi/2 sign(y) + O(1/z**3) */
        REAL h = hypot(x, y);
        return CNEW((x / h) / h, copysign(K_PI_2, y));
    }
    REAL one_minus = 1 - ax;
    REAL d = one_minus * one_minus + y * y;
    /* re = log(|1+z| / |1-z|) / 2: log1p where the ratio is near 1; a
       difference of logarithms (of at least log 2) elsewhere, where d may
       underflow */
    REAL re = 4 * ax < d ? (REAL)0.25 * log1p(4 * ax / d)
        : (REAL)0.5 * (log(hypot(1 + ax, y)) - log(hypot(one_minus, y)));
    REAL im = (REAL)0.5 * atan2(2 * y, one_minus * (1 + ax) - y * y);
    return CNEW(copysign(re, x), im);
}

static inline CPLX _pt_carctan_SFX(CPLX z)
{
    /* atan(z) = -i atanh(iz) */
    if (isnan(z.imag) && isinf(z.real))
        /* the sign of the zero is that of the NaN given (atanh would see
           its negation, whose sign some devices do not flip) */
        return CNEW(copysign(K_PI_2, z.real), copysign((REAL)0, z.imag));
    CPLX r = _pt_carctanh_SFX(CNEW(-z.imag, z.real));
    return CNEW(r.imag, -r.real);
}

static inline CPLX _pt_csign_SFX(CPLX z)
{
    /* numpy's sign: z/|z|, with its values at infinities */
    REAL x = z.real, y = z.imag;
    REAL a = hypot(x, y);
    if (isnan(a))
        return CNEW(NAN, NAN);
    if (isinf(a)) {
        if (isinf(x))
            return isinf(y) ? CNEW(NAN, NAN)
                            : CNEW(x > 0 ? (REAL)1 : (REAL)-1, (REAL)0);
        return CNEW((REAL)0, y > 0 ? (REAL)1 : (REAL)-1);
    }
    if (a == 0)
        return CNEW((REAL)0, (REAL)0);
    return CNEW(x / a, y / a);
}

static inline CPLX _pt_creciprocal_SFX(CPLX z)
{
    /* numpy's reciprocal */
    REAL x = z.real, y = z.imag;
    if (fabs(y) <= fabs(x)) {
        REAL r = y / x;
        REAL d = x + y * r;
        return CNEW(1 / d, -r / d);
    }
    REAL r = x / y;
    REAL d = x * r + y;
    return CNEW(r / d, -1 / d);
}

static inline CPLX _pt_cpow_SFX(CPLX a, CPLX b)
{
    /* numpy's power (npy_cpow) */
    REAL ar = a.real, ai = a.imag, br = b.real, bi = b.imag;
    if (br == 0 && bi == 0)
        return CNEW((REAL)1, (REAL)0);
    if (ar == 0 && ai == 0) {
        if (br > 0)
            return CNEW((REAL)0, (REAL)0);
        return CNEW(NAN, NAN);
    }
    if (bi == 0 && fabs(br) < 100 && br == (REAL)(int)br) {
        int n = (int)br;
        if (n == 1)
            return a;
        if (n == 2)
            return _pt_cmul_SFX(a, a);
        if (n == 3)
            return _pt_cmul_SFX(a, _pt_cmul_SFX(a, a));
        if (n < 0)
            n = -n;
        CPLX aa = CNEW((REAL)1, (REAL)0), p = a;
        int mask = 1;
        while (1) {
            if (n & mask)
                aa = _pt_cmul_SFX(aa, p);
            mask <<= 1;
            if (n < mask)
                break;
            p = _pt_cmul_SFX(p, p);
        }
        if (br < 0)
            aa = _pt_cdiv_SFX(CNEW((REAL)1, (REAL)0), aa);
        return aa;
    }
    /* the C library's cpow: exp(b log(a)), with C99's product */
    return _pt_cexp_SFX(_pt_cmul_annexg_SFX(b, _pt_clog_SFX(a)));
}
"""

_TYPES = {
    # numpy complex dtype: (REAL, CPLX, CNEW, SFX, constants)
    np.dtype(np.complex64): ("float", "cfloat_t", "cfloat_new", "f", {
        "K_MAX": "FLT_MAX", "K_LN2": "M_LN2_F", "K_LOG10E": "M_LOG10E_F",
        "K_PI_4": "M_PI_4_F", "K_PI_2": "M_PI_2_F", "K_PI": "M_PI_F",
        "K_EXP_MAX": "88.0f", "K_TANH_BIG": "9.0f", "K_HUGE": "1e18f",
        "K_SQRT_TINY": "0x1p-60f", "K_SQRT_UP": "0x1p60f",
        "K_SQRT_DOWN": "0x1p-30f"}),
    np.dtype(np.complex128): ("double", "cdouble_t", "cdouble_new", "d", {
        "K_MAX": "DBL_MAX", "K_LN2": "M_LN2", "K_LOG10E": "M_LOG10E",
        "K_PI_4": "M_PI_4", "K_PI_2": "M_PI_2", "K_PI": "M_PI",
        "K_EXP_MAX": "709.0", "K_TANH_BIG": "22.0", "K_HUGE": "1e150",
        "K_SQRT_TINY": "0x1p-500", "K_SQRT_UP": "0x1p500",
        "K_SQRT_DOWN": "0x1p-250"}),
}


def _source(dtype: np.dtype[Any]) -> str:
    real, cplx, cnew, sfx, consts = _TYPES[dtype]
    src = (_COMMON.replace("INFINITY", "((REAL)INFINITY)")
           .replace("NAN", "((REAL)NAN)"))
    # longest names first: K_PI_4 before K_PI
    for name in sorted(consts, key=len, reverse=True):
        src = src.replace(name, f"({consts[name]})")
    return (src.replace("REAL", real).replace("CPLX", cplx)
            .replace("CNEW", cnew).replace("_SFX", "_" + sfx))


_FUNCTION_START = re.compile(r"^static inline \w+ (_pt_\w+)\(", re.MULTILINE)


@functools.cache
def _definitions(dtype: np.dtype[Any]) -> dict[str, tuple[int, str,
                                                            frozenset[str]]]:
    """The functions of the source for *dtype*, by C name: their position
    in the source (each after those it calls), their definition and the
    names of the functions they call."""
    src = _source(dtype)
    starts = [m.start() for m in _FUNCTION_START.finditer(src)]
    names = [m.group(1) for m in _FUNCTION_START.finditer(src)]
    result: dict[str, tuple[int, str, frozenset[str]]] = {}
    for i, (start, name) in enumerate(zip(starts, names, strict=True)):
        code = src[start:starts[i + 1] if i + 1 < len(starts) else len(src)]
        calls = frozenset(n for n in names
                          if n != name and re.search(rf"\b{n}\(", code))
        # no contraction to fused multiply-adds, which numpy's C compiler
        # does not make either (a*c - b*d fused is finite where numpy's
        # products overflow); back to OpenCL's default after
        result[name] = (i, "#pragma OPENCL FP_CONTRACT OFF\n" + code.strip()
                        + "\n#pragma OPENCL FP_CONTRACT ON\n", calls)
    return result


def _preambles(dtype: np.dtype[Any], name: str) -> list[tuple[str, str]]:
    """The preambles defining the C function *name* for *dtype* and those
    it calls, tagged in the order of the source."""
    defs = _definitions(dtype)
    needed: set[str] = set()
    todo = [name]
    while todo:
        n = todo.pop()
        if n not in needed:
            needed.add(n)
            todo.extend(defs[n][2])
    return [(f"45_pytato_complex_{defs[n][0]:02d}_{n}", defs[n][1])
            for n in sorted(needed, key=lambda n: defs[n][0])]

# }}}


#: The complex functions of this module, by the name the lowering calls
#: (``_pt_c<name>``): the number of their arguments.
COMPLEX_FUNCTIONS = {
    **{name: 1 for name in (
        "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "arcsin",
        "arccos", "arctan", "sinh", "cosh", "tanh", "sign", "reciprocal")},
    "pow": 2, "div": 2,
}


class ComplexFunction(lp.ScalarCallable):
    """The :mod:`loopy` callable of ``_pt_c<name>`` (a name of
    :data:`COMPLEX_FUNCTIONS`): its arguments and result have the complex
    dtype of the result (real arguments are converted)."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        nargs = COMPLEX_FUNCTIONS[self.name[len("_pt_c"):]]
        dtypes = [arg_id_to_dtype.get(k) for k in range(nargs)]
        if any(dt is None for dt in dtypes):
            return self, clbl_inf_ctx
        dtype = np.result_type(np.complex64,
                               *(dt.numpy_dtype for dt in dtypes))
        if dtype not in _TYPES:
            raise lp.LoopyError(f"{self.name}: unexpected dtype {dtype}")
        sfx = _TYPES[dtype][3]
        cplx = NumpyType(dtype)
        return (self.copy(name_in_target=f"{self.name}_{sfx}",
                          arg_id_to_dtype=constantdict({
                              **dict.fromkeys(range(nargs), cplx), -1: cplx})),
                clbl_inf_ctx)

    def generate_preambles(self, target: Any) -> Any:
        # the function and those it calls, each once per program (by tag)
        yield from _preambles(self.arg_id_to_dtype[-1].numpy_dtype,
                              self.name_in_target)
