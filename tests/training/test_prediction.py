"""The one prediction loop: rows in input order whatever the strategy did.

References: hand-built arrival orders (shuffled, repeated, padded) whose
correct result is known, and the model called on all examples at once.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import prediction


def _arrive(batches):
    """Feeds `(indices, values)` batches; returns the emitted values."""
    in_order = prediction._InOrder()
    emitted = []
    for indices, values in batches:
        rows = in_order.add(np.asarray(indices),
                            {"value": np.asarray(values)})
        if rows is not None:
            emitted.append(rows["value"])
    return np.concatenate(emitted) if emitted else np.array([]), in_order


def test_rows_out_of_order_repeated_and_padded_come_out_once_in_order():
    batches = [([2, 3, -1], [20, 30, 0]),   # ahead of row 0: held back
               ([0, 1, 1], [0, 10, 10]),    # row 1 twice
               ([3, 4, -1], [30, 40, 0])]   # row 3 again, one padding row
    values, in_order = _arrive(batches)
    np.testing.assert_array_equal(values, [0, 10, 20, 30, 40])
    assert in_order.num_pending == 0


def test_a_lost_row_is_held_back_and_reported():
    values, in_order = _arrive([([0, 2], [0, 20])])
    np.testing.assert_array_equal(values, [0])
    assert in_order.num_pending == 1


@pytest.mark.parametrize("batch_size, pad", [(3, False), (4, True)])
def test_predict_streams_outputs_in_input_order(batch_size, pad):
    rows = np.arange(10 * 3, dtype=np.float32).reshape(10, 3)
    examples = tf.data.Dataset.from_tensor_slices({"x": rows})
    batches = list(prediction.predict(
        tf.distribute.get_strategy(), lambda f: {"y": 2.0 * f["x"]},
        examples, batch_size, pad_to_full_batches=pad, num_examples=10))
    # One batch per step: outputs stream, they are not collected first.
    assert len(batches) == -(-10 // batch_size)
    np.testing.assert_array_equal(
        np.concatenate([b["y"] for b in batches]), 2.0 * rows)


def test_predict_checks_the_count():
    examples = tf.data.Dataset.from_tensor_slices({"x": np.zeros([5, 2])})
    with pytest.raises(RuntimeError, match="over 6 test rows returned 5"):
        list(prediction.predict(tf.distribute.get_strategy(),
                                lambda f: {"y": f["x"]}, examples, 2,
                                num_examples=6, description="test rows"))


def _lengths_examples(lengths, full_length=32):
    """Examples with `lengths` real tokens each, padded to `full_length`."""
    mask = (np.arange(full_length)[None]
            < np.array(lengths)[:, None]).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices(
        {"input_ids": mask * 7, "input_mask": mask})


def test_a_second_predict_with_the_same_function_traces_nothing_new():
    from bert_tf.data import sequence_lengths
    policy = sequence_lengths.LengthPolicy()
    traced = []  # the static shape of every trace of the model call

    def predict_fn(features):
        def model(cut):
            traced.append(tuple(cut["input_ids"].shape))
            return {"total": tf.reduce_sum(cut["input_ids"], -1)}
        return sequence_lengths.call_at_length(
            model, features, policy, ("input_ids", "input_mask"))

    def run(lengths):
        rows = prediction.predict(tf.distribute.get_strategy(), predict_fn,
                                  _lengths_examples(lengths), 4,
                                  length_policy=policy)
        return np.concatenate([r["total"] for r in rows])

    first = [3, 9, 17, 2, 30, 5, 12, 25, 7, 1]  # batches of 4, 4 and 2
    np.testing.assert_array_equal(run(first), 7 * np.array(first))
    # A first shape, the generalized one, the partial last batch: at most.
    assert 1 <= len(traced) <= 3
    count = len(traced)
    second = [31, 4, 6, 11, 19, 8, 14]  # other lengths, other last batch
    np.testing.assert_array_equal(run(second), 7 * np.array(second))
    assert len(traced) == count, traced
    # A new function is traced anew; the old one's step is let go with it.
    import gc
    import weakref
    gc.collect()
    steps = len(prediction._STEPS)
    function = weakref.ref(predict_fn)
    del predict_fn
    gc.collect()
    # Other tests' functions may go in the same collection: at least ours.
    assert function() is None
    assert len(prediction._STEPS) <= steps - 1
