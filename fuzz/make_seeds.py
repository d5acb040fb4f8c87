#!/usr/bin/python3
"""Writes the fuzzer's seed corpus: a few tiny .npy files as NumPy writes them.
Run from the repository root: /usr/bin/python3 fuzz/make_seeds.py"""
import io
import os

import numpy as np
from numpy.lib import format as npf

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
os.makedirs(here, exist_ok=True)
arrays = {
    "f32_vec": np.arange(3, dtype="<f4"),
    "f64_scalar": np.float64(2.5),
    "i32_2x3": np.arange(6, dtype="<i4").reshape(2, 3),
    "i64_4d": np.arange(4, dtype="<i8").reshape(1, 2, 1, 2),
    "f64_empty": np.zeros((0, 3)),
    "u8_refused": np.arange(3, dtype="u1"),
    "fortran_refused": np.asfortranarray(np.ones((2, 2), "<f4")),
    "f16_2x2": np.array([[1e-7, -65504], [np.inf, np.nan]], "<f2"),
    "bf16_vec": np.array([0x3F80, 0x0001, 0xFF80], "<u2").view("V2"),  # '|V2': bfloat16
}
for name, array in arrays.items():
    with open(os.path.join(here, name + ".npy"), "wb") as f:
        np.save(f, np.asarray(array))
for version in [(2, 0), (3, 0)]:
    buf = io.BytesIO()
    npf.write_array(buf, np.array([1.5, -2], "<f4"), version=version)
    with open(os.path.join(here, "f32_v%d.npy" % version[0]), "wb") as f:
        f.write(buf.getvalue())
