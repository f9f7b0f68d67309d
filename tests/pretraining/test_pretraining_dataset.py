"""The static-masking input pipeline over Google's pretraining TFRecords."""

import gzip
import json
import re

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.file_io import expand_input_patterns
from bert_tf.pretraining.dataset import check_pretraining_records
from bert_tf.pretraining.dataset import pretraining_dataset

SEQ = 8
PRED = 3
INT_FEATURES = ("input_ids", "input_mask", "segment_ids",
                "masked_lm_positions", "masked_lm_ids")


def _record(index, seq=SEQ, pred=PRED):
    """A record whose values encode its index (so order can be checked)."""
    return {
        "input_ids": [index * 100 + i for i in range(seq)],
        "input_mask": [1] * (seq - 2) + [0, 0],
        "segment_ids": [0] * (seq // 2) + [1] * (seq - seq // 2),
        "masked_lm_positions": [1 + (index + i) % (seq - 1)
                                for i in range(pred)],
        "masked_lm_ids": [index + i for i in range(pred)],
        "masked_lm_weights": [1.0] * (pred - 1) + [0.0],
        "next_sentence_labels": [index % 2],
    }


def _serialize(values):
    """A tf.train.Example with Google's schema (written by hand here)."""
    feature = {}
    for name, value in values.items():
        if name == "masked_lm_weights":
            feature[name] = tf.train.Feature(
                float_list=tf.train.FloatList(value=value))
        else:
            feature[name] = tf.train.Feature(
                int64_list=tf.train.Int64List(value=value))
    return tf.train.Example(
        features=tf.train.Features(feature=feature)).SerializeToString()


def _write(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for values in records:
            writer.write(_serialize(values))
    return str(path)


def _write_shards(directory, num_files, per_file):
    """Files data-00000..; record i goes to file i // per_file."""
    paths = []
    for f in range(num_files):
        records = [_record(f * per_file + r) for r in range(per_file)]
        paths.append(_write(directory / f"data-{f:05d}.tfrecord", records))
    return paths


def _record_indices(batches):
    """The index each record of the batches was written with."""
    return [int(row[0]) // 100
            for batch in batches for row in batch["input_ids"].numpy()]


def test_eval_reads_every_record_in_order(tmp_path):
    _write_shards(tmp_path, num_files=3, per_file=4)
    dataset = pretraining_dataset(str(tmp_path / "data-*"), batch_size=4,
                                  max_seq_length=SEQ,
                                  max_predictions_per_seq=PRED,
                                  is_training=False)
    batches = list(dataset)
    assert _record_indices(batches) == list(range(12))
    batch = batches[1]
    assert batch["masked_lm_weights"].dtype == tf.float32
    for name in INT_FEATURES + ("next_sentence_labels",):
        assert batch[name].dtype == tf.int32, name
    assert batch["input_ids"].shape == (4, SEQ)
    assert batch["masked_lm_positions"].shape == (4, PRED)
    assert batch["next_sentence_labels"].shape == (4,)
    for row, index in enumerate(range(4, 8)):
        expected = _record(index)
        for name in INT_FEATURES + ("masked_lm_weights",):
            np.testing.assert_array_equal(batch[name][row], expected[name])
        assert batch["next_sentence_labels"][row] == expected[
            "next_sentence_labels"][0]


def test_element_spec_is_static(tmp_path):
    _write_shards(tmp_path, num_files=1, per_file=3)
    for is_training in (True, False):
        dataset = pretraining_dataset(str(tmp_path / "*"), 2, SEQ, PRED,
                                      is_training)
        spec = dataset.element_spec
        assert spec["input_ids"].shape == (2, SEQ)
        assert spec["masked_lm_weights"].shape == (2, PRED)
        assert spec["next_sentence_labels"].shape == (2,)


def test_eval_drop_remainder(tmp_path):
    _write_shards(tmp_path, num_files=1, per_file=7)
    pattern = str(tmp_path / "*")
    dropped = list(pretraining_dataset(pattern, 3, SEQ, PRED, False))
    assert _record_indices(dropped) == list(range(6))
    kept = list(pretraining_dataset(pattern, 3, SEQ, PRED, False,
                                    drop_remainder=False))
    assert _record_indices(kept) == list(range(7))


def test_training_shuffles_repeats_and_is_seeded(tmp_path):
    _write_shards(tmp_path, num_files=4, per_file=5)
    pattern = str(tmp_path / "data-*")

    def first_indices(seed, num_batches=10):
        dataset = pretraining_dataset(pattern, 4, SEQ, PRED, True, seed=seed,
                                      shuffle_buffer_size=8)
        return _record_indices(dataset.take(num_batches))

    first = first_indices(seed=3)
    assert len(first) == 40  # repeats past the 20 records
    assert sorted(first[:20]) != first[:20]  # shuffled
    assert first_indices(seed=3) == first  # reproducible
    assert first_indices(seed=4) != first
    assert set(first) <= set(range(20))
    assert len(set(first)) >= 15  # records of all files are mixed in


def test_comma_separated_and_list_patterns(tmp_path):
    paths = _write_shards(tmp_path, num_files=3, per_file=1)
    as_string = f"{paths[2]}, {tmp_path / 'data-0000[01]*'}"
    assert expand_input_patterns(as_string, sort=True) == [paths[2], paths[0], paths[1]]
    assert expand_input_patterns([paths[1], paths[0] + "," + paths[1]], sort=True) == [
        paths[1], paths[0]]


@pytest.mark.parametrize("num_files, per_file", [(4, 3), (1, 12)])
def test_input_context_sharding_is_a_partition(tmp_path, num_files,
                                               per_file):
    """By file with enough files, by record otherwise: pipelines see
    disjoint records that together cover the data."""
    _write_shards(tmp_path, num_files=num_files, per_file=per_file)
    seen = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=pipeline_id,
            num_replicas_in_sync=2)
        dataset = pretraining_dataset(str(tmp_path / "*"), 2, SEQ, PRED,
                                      False, input_context=context)
        seen.append(_record_indices(dataset))
    assert set(seen[0]).isdisjoint(seen[1])
    assert sorted(seen[0] + seen[1]) == list(range(12))
    if num_files == 4:  # whole files: records 0-2 and 6-8 for pipeline 0
        assert seen[0] == [0, 1, 2, 6, 7, 8]


def test_training_record_sharding_is_disjoint(tmp_path):
    """One file, two pipelines, training without a seed: still disjoint."""
    _write_shards(tmp_path, num_files=1, per_file=10)
    seen = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(2, pipeline_id, 2)
        dataset = pretraining_dataset(str(tmp_path / "*"), 5, SEQ, PRED, True,
                                      input_context=context)
        seen.append(set(_record_indices(dataset.take(4))))
    # Every other record of the one stream (the same on both pipelines).
    assert seen[0] <= {0, 2, 4, 6, 8}
    assert seen[1] <= {1, 3, 5, 7, 9}


def test_reads_google_records(tmp_path, golden_dir):
    """Records of Google's create_pretraining_data.py (decoded in the golden
    file) come out unchanged."""
    path = golden_dir / "create_pretraining_data" / "expected.decoded.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as reader:
        expected = [json.loads(line) for line, _ in zip(reader, range(64))]
    _write(tmp_path / "google.tfrecord", expected)
    dataset = pretraining_dataset(str(tmp_path / "google.tfrecord"), 16, 64,
                                  10, False)
    rows = [{name: value[i].numpy() for name, value in batch.items()}
            for batch in dataset for i in range(16)]
    assert len(rows) == 64
    for row, record in zip(rows, expected):
        for name in INT_FEATURES:
            np.testing.assert_array_equal(row[name], record[name])
        np.testing.assert_allclose(row["masked_lm_weights"],
                                   record["masked_lm_weights"])
        assert row["next_sentence_labels"] == record[
            "next_sentence_labels"][0]


def test_batch_feeds_the_pretraining_heads(tmp_path, tiny_config):
    from bert_tf.modeling import BertModel, MaskedLMHead, NextSentenceHead
    records = [_record(i) for i in range(4)]
    for values in records:  # ids must be inside the tiny vocab
        values["input_ids"] = [v % tiny_config.vocab_size
                               for v in values["input_ids"]]
    _write(tmp_path / "r.tfrecord", records)
    batch = next(iter(pretraining_dataset(str(tmp_path / "r.tfrecord"), 4,
                                          SEQ, PRED, False)))
    bert = BertModel(tiny_config)
    outputs = bert(batch["input_ids"], batch["input_mask"],
                   batch["segment_ids"])
    mlm_logits = MaskedLMHead(tiny_config, bert.embedding_table)(
        outputs["sequence_output"], batch["masked_lm_positions"])
    nsp_logits = NextSentenceHead(tiny_config)(outputs["pooled_output"])
    assert mlm_logits.shape == (4, PRED, tiny_config.vocab_size)
    assert nsp_logits.shape == (4, 2)
    nsp_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
        batch["next_sentence_labels"], nsp_logits)
    assert np.all(np.isfinite(nsp_loss.numpy()))


# -- bad input -----------------------------------------------------------


def test_pattern_matching_nothing_is_named(tmp_path):
    _write_shards(tmp_path, num_files=1, per_file=1)
    missing = str(tmp_path / "nothing-*.tfrecord")
    with pytest.raises(ValueError, match=r"no file matches input pattern "
                       r"'.*nothing-\*\.tfrecord'"):
        pretraining_dataset(f"{tmp_path / 'data-*'},{missing}", 1, SEQ, PRED,
                            True)
    with pytest.raises(ValueError, match="no input file given"):
        expand_input_patterns(" , ")


def test_wrong_max_seq_length_names_feature_and_lengths(tmp_path):
    path = _write(tmp_path / "long.tfrecord", [_record(0, seq=16)])
    with pytest.raises(ValueError) as error:
        pretraining_dataset(path, 1, SEQ, PRED, True)
    message = str(error.value)
    assert "long.tfrecord" in message
    assert "'input_ids' has 16 values, expected 8" in message
    assert "max_seq_length=8" in message


def test_wrong_max_predictions_names_the_flag(tmp_path):
    path = _write(tmp_path / "p.tfrecord", [_record(0, pred=5)])
    with pytest.raises(ValueError, match=r"p\.tfrecord: feature "
                       r"'masked_lm_positions' has 5 values, expected 3 "
                       r"\(max_predictions_per_seq=3"):
        check_pretraining_records(path, SEQ, PRED)


def test_missing_feature_is_named(tmp_path):
    values = _record(0)
    del values["segment_ids"]
    path = _write(tmp_path / "m.tfrecord", [values])
    with pytest.raises(ValueError, match=r"m\.tfrecord: the first record has "
                       r"no feature 'segment_ids'"):
        check_pretraining_records(path, SEQ, PRED)


def test_float_feature_written_as_ints_is_named(tmp_path):
    values = _record(0)
    path = tmp_path / "w.tfrecord"
    example = tf.train.Example.FromString(_serialize(values))
    example.features.feature["masked_lm_weights"].Clear()
    example.features.feature["masked_lm_weights"].int64_list.value.extend(
        [1, 1, 0])
    with tf.io.TFRecordWriter(str(path)) as writer:
        writer.write(example.SerializeToString())
    with pytest.raises(ValueError, match="'masked_lm_weights' is a "
                       "int64_list, expected a float_list"):
        check_pretraining_records(str(path), SEQ, PRED)


def test_corrupt_file_is_named(tmp_path):
    path = tmp_path / "corrupt.tfrecord"
    path.write_bytes(b"this is not a TFRecord file at all" * 4)
    # The file and the offset of the damaged record (bert_tf.data's scan of
    # the framing and CRCs), not TensorFlow's nameless message.
    with pytest.raises(ValueError, match=r"corrupt\.tfrecord is damaged at "
                       r"byte offset 0 "):
        pretraining_dataset(str(path), 1, SEQ, PRED, True)


def test_record_that_is_not_an_example_is_named(tmp_path):
    path = tmp_path / "text.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        writer.write(b"\xff\xfe not a protocol buffer")
    with pytest.raises(ValueError, match=r"text\.tfrecord: the first record "
                       r"is not a tf.train.Example"):
        check_pretraining_records(str(path), SEQ, PRED)


def test_files_without_records(tmp_path):
    empty = _write(tmp_path / "a-empty.tfrecord", [])
    assert check_pretraining_records(empty, SEQ, PRED) is False
    with pytest.raises(ValueError, match=r"none of the 1 input files holds a "
                       r"record \(first: .*a-empty\.tfrecord\)"):
        pretraining_dataset(empty, 1, SEQ, PRED, False)
    # An empty shard among good ones is fine.
    _write(tmp_path / "b-full.tfrecord", [_record(0), _record(1)])
    dataset = pretraining_dataset(str(tmp_path / "*.tfrecord"), 2, SEQ, PRED,
                                  False)
    assert _record_indices(dataset) == [0, 1]


def test_wrong_length_in_a_later_record_names_file_and_feature(tmp_path):
    """Only the first record is checked up front; a later bad record still
    fails with the file, the feature and both lengths in the message."""
    path = _write(tmp_path / "mixed.tfrecord",
                  [_record(0), _record(1, seq=10)])
    dataset = pretraining_dataset(path, 2, SEQ, PRED, False)
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        list(dataset)
    message = error.value.message
    assert "mixed.tfrecord" in message
    # All three sequence features are too long; any may be reported.
    assert re.search(r"Key: (input_ids|input_mask|segment_ids)", message)
    assert "Values size: 10 but output shape: [8]" in message
