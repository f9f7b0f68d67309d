"""Feature conversion against Model Garden's `classifier_data_lib`.

Model Garden's `convert_single_example` is an independent implementation of
Google's; both get the same examples and the same tokenizer.
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import encoded_input
from bert_tf.tasks.classification import features as cf
from bert_tf.tasks.classification.glue_processors import InputExample
from bert_tf.text.tokenization import FullTokenizer

LONG = ("The quick brown fox jumps over the lazy dog while the unaffable "
        "hippopotamus watches from the riverbank, unimpressed. ")


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab_file):
    return FullTokenizer(str(uncased_vocab_file), do_lower_case=True)


@pytest.fixture(scope="module")
def reference():
    from official.nlp.data import classifier_data_lib
    return classifier_data_lib


EXAMPLES = [
    InputExample("a", "Hello, World!", None, "1"),
    InputExample("b", "Is this Jacksonville?", "No, it is not.", "0"),
    InputExample("c", LONG * 3, None, "1"),                 # single, cut
    InputExample("d", LONG * 3, "Short.", "0"),             # pair, cut A
    InputExample("e", "Short.", LONG * 3, "1"),             # pair, cut B
    InputExample("f", LONG * 2, LONG * 2, "0"),             # tie: B first
    InputExample("g", LONG + "extra words", LONG, "1"),
    InputExample("h", "Ünïcödé café — 北京 naïve", "", "0"),  # empty B
    InputExample("i", "", "Only b.", "1"),                  # empty A
    InputExample("j", "", None, "0"),
]


@pytest.mark.parametrize("max_seq_length", [5, 8, 16, 33, 128])
def test_matches_model_garden(tokenizer, reference, max_seq_length):
    label_list = ["0", "1"]
    for index, example in enumerate(EXAMPLES):
        ours = cf.convert_single_example(example, label_list, max_seq_length,
                                         tokenizer)
        theirs = reference.convert_single_example(
            index, reference.InputExample(example.guid, example.text_a,
                                          example.text_b, example.label),
            label_list, max_seq_length, tokenizer)
        assert ours.input_ids == theirs.input_ids, example.guid
        assert ours.input_mask == theirs.input_mask, example.guid
        assert ours.segment_ids == theirs.segment_ids, example.guid
        assert ours.label_id == theirs.label_id, example.guid
        assert ours.is_real_example


def test_layout_by_hand(tokenizer):
    features = cf.convert_single_example(
        InputExample("x", "hello world", "hello", "b"), ["a", "b"], 8,
        tokenizer)
    vocab = tokenizer.vocab
    assert features.input_ids == [vocab["[CLS]"], vocab["hello"],
                                  vocab["world"], vocab["[SEP]"],
                                  vocab["hello"], vocab["[SEP]"], 0, 0]
    assert features.segment_ids == [0, 0, 0, 0, 1, 1, 0, 0]
    assert features.input_mask == [1, 1, 1, 1, 1, 1, 0, 0]
    assert features.label_id == 1


def test_truncate_seq_pair_pops_the_longer_and_b_on_ties(reference):
    for len_a, len_b, budget in [(5, 5, 6), (7, 2, 5), (2, 7, 5), (4, 4, 8),
                                 (0, 9, 3), (6, 5, 4)]:
        ours = (list(range(len_a)), list(range(len_b)))
        theirs = (list(range(len_a)), list(range(len_b)))
        encoded_input.truncate_seq_pair(*ours, budget)
        reference._truncate_seq_pair(*theirs, budget)
        assert ours == theirs, (len_a, len_b, budget)
    a, b = list("xyz"), list("pqr")
    encoded_input.truncate_seq_pair(a, b, 5)
    assert (a, b) == (list("xyz"), list("pq"))


def test_padding_example_and_unlabelled_and_regression(tokenizer):
    padding = cf.convert_single_example(cf.PaddingInputExample(), ["0", "1"],
                                        6, tokenizer)
    assert padding == cf.ClassifierFeatures([0] * 6, [0] * 6, [0] * 6, 0,
                                            False)
    unlabelled = cf.convert_single_example(
        InputExample("t", "hi", None, None), ["x", "y"], 6, tokenizer)
    assert unlabelled.label_id == 0
    score = cf.convert_single_example(
        InputExample("s", "hi", "yo", 3.25), None, 6, tokenizer)
    assert score.label_id == 3.25


def test_errors(tokenizer):
    with pytest.raises(ValueError, match=r"example q7: label 'maybe' is not "
                                         r"one of '0', '1'"):
        cf.convert_single_example(InputExample("q7", "a", None, "maybe"),
                                  ["0", "1"], 8, tokenizer)
    with pytest.raises(ValueError, match="max_seq_length 2 cannot hold the 3"):
        cf.convert_single_example(InputExample("p", "a", "b", "0"),
                                  ["0", "1"], 2, tokenizer)


def test_pad_to_batch_multiple():
    examples = [InputExample(str(i), "t") for i in range(5)]
    padded = cf.pad_to_batch_multiple(examples, 4)
    assert len(padded) == 8 and padded[:5] == examples
    assert all(isinstance(e, cf.PaddingInputExample) for e in padded[5:])
    assert len(cf.pad_to_batch_multiple(examples, 5)) == 5
    assert len(examples) == 5


def test_tfrecord_is_googles_format(tmp_path, tokenizer):
    examples = EXAMPLES[:3] + [cf.PaddingInputExample()]
    features = cf.convert_examples_to_features(examples, ["0", "1"], 16,
                                               tokenizer)
    path = tmp_path / "eval.tf_record"
    assert cf.write_tfrecord(features, path) == 4
    assert [p.name for p in tmp_path.iterdir()] == ["eval.tf_record"]

    # Parsed with the protobuf itself, not our reader: names and types.
    raw = [tf.train.Example.FromString(r.numpy())
           for r in tf.data.TFRecordDataset(str(path))]
    assert sorted(raw[0].features.feature) == sorted(cf.FEATURE_NAMES)
    for record, feature in zip(raw, features):
        fields = record.features.feature
        assert list(fields["input_ids"].int64_list.value) == feature.input_ids
        assert list(fields["input_mask"].int64_list.value) == (
            feature.input_mask)
        assert list(fields["segment_ids"].int64_list.value) == (
            feature.segment_ids)
        assert list(fields["label_ids"].int64_list.value) == [
            feature.label_id]
        assert list(fields["is_real_example"].int64_list.value) == [
            int(feature.is_real_example)]

    read = list(cf.read_tfrecord(path, 16).as_numpy_iterator())
    arrays = cf.features_to_arrays(features)
    for i, record in enumerate(read):
        for name in cf.FEATURE_NAMES:
            np.testing.assert_array_equal(record[name], arrays[name][i])
            assert record[name].dtype == np.int32


def test_regression_records_store_float_labels(tmp_path, tokenizer):
    features = cf.convert_examples_to_features(
        [InputExample("s", "a", "b", 4.5), InputExample("t", "c", "d", 0.25)],
        None, 8, tokenizer)
    path = tmp_path / "train.tf_record"
    cf.write_tfrecord(features, path, is_regression=True)
    raw = tf.train.Example.FromString(
        next(iter(tf.data.TFRecordDataset(str(path)))).numpy())
    assert list(raw.features.feature["label_ids"].float_list.value) == [4.5]
    labels = [r["label_ids"] for r in cf.read_tfrecord(
        path, 8, is_regression=True).as_numpy_iterator()]
    assert labels == [4.5, 0.25]


def test_read_missing_record_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing\.tf_record"):
        cf.read_tfrecord(tmp_path / "nothing.tf_record", 8)


def test_batch_dataset_eval_in_order_and_train_full_batches(tokenizer):
    examples = [InputExample(str(i), f"word {i}", None, str(i % 2))
                for i in range(7)]
    features = cf.convert_examples_to_features(examples, ["0", "1"], 8,
                                               tokenizer)
    dataset = cf.dataset_from_features(features)
    eval_batches = list(cf.batch_dataset(dataset, 3, is_training=False)
                        .as_numpy_iterator())
    assert [len(b["label_ids"]) for b in eval_batches] == [3, 3, 1]
    labels = np.concatenate([b["label_ids"] for b in eval_batches])
    np.testing.assert_array_equal(labels, [i % 2 for i in range(7)])

    train = cf.batch_dataset(dataset, 3, is_training=True, seed=1)
    seen = []
    for batch in train.take(10):  # more records than one pass: it repeats
        assert batch["input_ids"].shape == (3, 8)
        seen.extend(batch["input_ids"][:, 2].numpy().tolist())
    first_pass = [f.input_ids[2] for f in features]
    assert set(seen) == set(first_pass)
    assert seen[:7] != first_pass  # shuffled
