"""The draws of a `random.Random`, made as fast as this machine allows.

Google's `create_pretraining_data.py` is defined by the exact sequence of
calls it makes on one `random.Random(seed)`; most of its time is the
masking shuffle (one rejection-sampled draw per candidate position, about
125 an instance). `replayed(rng)` gives the draws of `rng` through the
fastest exact path available:

- a `Twin` of the C extension `_pretraining_native` (built by
  `pip install`, optional): a Mersenne Twister holding `rng`'s state that
  makes the same draws word for word, shuffles included, without a Python
  step per element (and that the extension's instance loop draws from);
  it is checked against this Python's `random.Random` before first use,
  and `rng` takes the stream back where it left off;
- else `rng` itself, with its shuffle's per-element call to `_randbelow`
  inlined (`_inline_shuffle`), which is also checked.

Both give the same numbers as `rng.random()`, `rng._randbelow(n)` and
`rng.shuffle(items)` would, in the same order: the output never depends on
which path ran.
"""

import contextlib
import random
from array import array

from absl import logging

try:
    from bert_tf.pretraining import _native
except ImportError:  # Built without a C compiler: Python's generator.
    _native = None


def _stock_shuffle_steps(max_length):
    """(i, i + 1, bit length of i + 1) for i = max_length - 1 down to 1."""
    return [(i, i + 1, (i + 1).bit_length())
            for i in range(max_length - 1, 0, -1)]


def _inline_shuffle(rng, steps):
    """`rng.shuffle` of CPython's `random.Random`, with `_randbelow` inlined.

    The same loop as `Random.shuffle` (for i from len - 1 down to 1,
    j = _randbelow(i + 1) by rejection sampling on
    `getrandbits(bit_length(i + 1))`, swap) without the call per element:
    the same `getrandbits` calls, the same permutation. Lists longer than
    `steps` allows go to `rng.shuffle`.
    """
    getrandbits = rng.getrandbits
    max_length = len(steps) + 1

    def shuffle(items):
        length = len(items)
        if length > max_length:
            rng.shuffle(items)
            return
        for i, bound, bits in steps[max_length - length:]:
            j = getrandbits(bits)
            while j >= bound:
                j = getrandbits(bits)
            items[i], items[j] = items[j], items[i]

    return shuffle


def _mixed_draws(draws):
    """A fixed mix of every kind of draw (the exactness check's script)."""
    results = [draws.random() for _ in range(5)]
    for n in (1, 2, 3, 4, 5, 7, 8, 9, 1000, 2 ** 31 - 1, 2 ** 31,
              2 ** 32 - 1, 2 ** 32, 2 ** 40 + 3, 2 ** 63, 2 ** 64 - 1):
        results.append(draws.randbelow(n))
    for length in list(range(80)) + [300, 1500]:
        items = list(range(length))
        draws.shuffle(items)
        results.append(items)
    for typecode in "Hiq":
        items = array(typecode, range(700))
        draws.shuffle(items)
        results.append(list(items))
    groups = [[k, k + 1] for k in range(40)]
    draws.shuffle(groups)
    results.append(groups)
    results.extend(draws.random() for _ in range(5))
    return results


class _PythonDraws:
    """`rng`'s own draws (the shuffle inlined for lists up to a length)."""

    def __init__(self, rng, max_shuffle_length):
        self.random = rng.random
        # `_randbelow(n)` is what `randint`, `randrange` and `choice` call
        # after their argument checks.
        self.randbelow = rng._randbelow
        self.shuffle = _inline_shuffle(
            rng, _stock_shuffle_steps(max(2, max_shuffle_length)))


_checked = {}


def _is_exact(kind):
    """Whether the draws of `kind` ("c" or "python") equal this Python's
    `random.Random`'s, on `_mixed_draws` (checked once per process)."""
    if kind not in _checked:
        reference = random.Random(20240601)
        candidate = random.Random(20240601)
        expected = _mixed_draws(_PythonReference(reference))
        if kind == "c":
            twin = _native.Twin(candidate.getstate()[1])
            actual = _mixed_draws(twin)
            same_state = twin.getstate() == reference.getstate()[1]
        else:
            actual = _mixed_draws(_PythonDraws(candidate, 80))
            same_state = candidate.getstate() == reference.getstate()
        _checked[kind] = actual == expected and same_state
        if not _checked[kind]:
            logging.warning(
                "The %s replay of random.Random differs from this Python's "
                "(%s); using random.Random itself.", kind,
                random.__file__)
    return _checked[kind]


class _PythonReference:
    """`random.Random`'s public draws under the names `replayed` gives."""

    def __init__(self, rng):
        self.random = rng.random
        self.randbelow = rng._randbelow
        self.shuffle = rng.shuffle


def native_instance_loop(draws):
    """The extension's `append_instances` (one pass of Google's instance
    loop, in C) if `draws` is its `Twin`, else None."""
    if _native is not None and isinstance(draws, _native.Twin):
        return _native.append_instances
    return None


def c_extension_available():
    """Whether the C replay is built and exact on this Python."""
    return _native is not None and _is_exact("c")


@contextlib.contextmanager
def replayed(rng, max_shuffle_length=128, use_c_extension=True):
    """Draws identical to `rng`'s, as fast as possible.

    Inside the block, `rng` must not be used; on leaving it (also by an
    exception), `rng` is exactly where the draws made so far left the
    stream.

    Args:
      rng: the `random.Random`.
      max_shuffle_length: the longest list the Python path's faster shuffle
        is prepared for (longer ones go to `rng.shuffle`).
      use_c_extension: False: Python's generator even if the C one is
        available (for comparisons; the draws are the same).

    Yields:
      An object with `random()`, `randbelow(n)` (= `rng._randbelow(n)`)
      and `shuffle(items)` (a list or a writable `array.array`).
    """
    if type(rng) is not random.Random:
        # A subclass may draw differently: only its own methods are exact.
        yield _PythonReference(rng)
        return
    if use_c_extension and c_extension_available():
        version, _, gauss_next = rng.getstate()
        twin = _native.Twin(rng.getstate()[1])
        try:
            yield twin
        finally:
            rng.setstate((version, twin.getstate(), gauss_next))
        return
    if _is_exact("python"):
        yield _PythonDraws(rng, max_shuffle_length)
    else:
        yield _PythonReference(rng)
