"""exact_random: the draws of Python's own `random.Random`, faster.

Reference: CPython's `random.Random` itself (values, and the generator's
state after the same calls).
"""

import random
from array import array

import pytest

from bert_tf.pretraining import exact_random

PATHS = ["c", "python"]


def _draws_path(path, monkeypatch, request):
    if path == "c":
        request.getfixturevalue("c_extension")
        return True
    monkeypatch.setattr(exact_random, "_native", None)
    return False


def _script(seed):
    """A long, seeded mix of draws: (kind, argument) pairs."""
    script_rng = random.Random(seed)
    script = []
    for _ in range(400):
        kind = script_rng.choice(["random", "randbelow", "shuffle_list",
                                  "shuffle_array", "shuffle_long"])
        if kind == "randbelow":
            bits = script_rng.randint(1, 64)
            argument = script_rng.randint(1, 2 ** bits - 1)
        elif kind == "shuffle_list":
            argument = script_rng.randint(0, 140)
        elif kind == "shuffle_array":
            argument = (script_rng.choice("Hiq"), script_rng.randint(0, 300))
        elif kind == "shuffle_long":
            argument = script_rng.randint(129, 2000)
        else:
            argument = None
        script.append((kind, argument))
    return script


def _play(script, random_fn, randbelow, shuffle):
    results = []
    for kind, argument in script:
        if kind == "random":
            results.append(random_fn())
        elif kind == "randbelow":
            results.append(randbelow(argument))
        elif kind == "shuffle_array":
            typecode, length = argument
            items = array(typecode, range(length))
            shuffle(items)
            results.append(items.tolist())
        else:
            items = [(k, str(k)) for k in range(argument)]
            shuffle(items)
            results.append(items)
    return results


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("seed", [0, 1, 12345, 2 ** 40 + 7])
def test_draws_and_state_equal_pythons(path, seed, monkeypatch, request):
    use_c = _draws_path(path, monkeypatch, request)
    script = _script(seed)
    reference = random.Random(seed)
    expected = _play(script, reference.random, reference._randbelow,
                     reference.shuffle)
    expected_state = reference.getstate()
    expected_next = [reference.random() for _ in range(3)]

    rng = random.Random(seed)
    with exact_random.replayed(rng, max_shuffle_length=128,
                               use_c_extension=use_c) as draws:
        if use_c:
            assert type(draws).__name__ == "Twin"
        actual = _play(script, draws.random, draws.randbelow, draws.shuffle)
    assert actual == expected
    # The stream goes on in `rng` exactly where the draws left it.
    assert rng.getstate() == expected_state
    assert [rng.random() for _ in range(3)] == expected_next


@pytest.mark.parametrize("path", PATHS)
def test_state_handed_back_when_the_block_fails(path, monkeypatch,
                                                request):
    use_c = _draws_path(path, monkeypatch, request)
    reference = random.Random(3)
    expected = [reference.random() for _ in range(700)]
    rng = random.Random(3)
    with pytest.raises(KeyError):
        with exact_random.replayed(rng, use_c_extension=use_c) as draws:
            # Past one regeneration of the 624-word state.
            actual = [draws.random() for _ in range(700)]
            raise KeyError("stop")
    assert actual == expected
    assert rng.getstate() == reference.getstate()


def test_a_subclass_draws_with_its_own_methods():
    class Scripted(random.Random):
        def random(self):
            return 0.25

    with exact_random.replayed(Scripted(1)) as draws:
        assert draws.random() == 0.25


def test_c_twin_rejects_a_bad_state(c_extension):
    with pytest.raises(ValueError, match="625"):
        c_extension.Twin((1, 2, 3))
    state = random.Random(1).getstate()[1]
    with pytest.raises(ValueError, match="position"):
        c_extension.Twin(state[:-1] + (625,))
    twin = c_extension.Twin(state)
    with pytest.raises(TypeError, match="list or a writable"):
        twin.shuffle((1, 2, 3))
    with pytest.raises(ValueError, match="positive"):
        twin.randbelow(0)
