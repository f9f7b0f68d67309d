"""SQuAD features: windows, max context, answer spans, records.

References: Model Garden's `squad_lib.convert_examples_to_features` (a port
of Google's, run with Model Garden's own tokenizer) on generated data, and
hand-worked small documents.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.squad import examples as squad_examples
from bert_tf.tasks.squad import features as squad_features
from bert_tf.tasks.squad.examples import SquadExample
from bert_tf.text import tokenization
import squad_testdata

_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def _tokenizer(tmp_path, words):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(_SPECIAL + list(words)) + "\n",
                    encoding="utf-8")
    return tokenization.FullTokenizer(str(path), do_lower_case=True)


# -- windows of a hand-built document ----------------------------------------

def test_windows_of_a_hand_built_document(tmp_path):
    words = [f"w{i}" for i in range(10)]
    tokenizer = _tokenizer(tmp_path, words + ["q"])
    # Answer: w4 w5.
    example = SquadExample(qas_id="x", question_text="q q q",
                           doc_tokens=words, orig_answer_text="w4 w5",
                           start_position=4, end_position=5)
    # max_seq_length 8 - 1 query piece - 3 = 4 pieces per window.
    features = list(squad_features.generate_features(
        [example], tokenizer, max_seq_length=8, doc_stride=2,
        max_query_length=1, is_training=True))
    assert [f.unique_id for f in features] == [
        1000000000, 1000000001, 1000000002, 1000000003]
    assert [f.doc_span_index for f in features] == [0, 1, 2, 3]
    second = features[1]
    assert second.tokens == ["[CLS]", "q", "[SEP]", "w2", "w3", "w4", "w5",
                             "[SEP]"]
    assert second.token_to_orig_map == {3: 2, 4: 3, 5: 4, 6: 5}
    # Owners are [0, 0, 0, 1, 1, 2, 2, 3, 3, 3] (see above).
    assert second.token_is_max_context == {3: False, 4: True, 5: True,
                                           6: False}
    assert second.segment_ids == [0, 0, 0, 1, 1, 1, 1, 1]
    assert second.input_mask == [1] * 8
    vocab = tokenizer.vocab
    assert second.input_ids == [vocab[t] for t in second.tokens]
    # The answer (pieces 4-5) is inside windows 1 and 2 only; the others
    # point at [CLS].
    assert [(f.start_position, f.end_position) for f in features] == [
        (0, 0), (5, 6), (3, 4), (0, 0)]
    assert all(f.is_impossible is False for f in features)
    last = features[3]
    assert last.tokens[-1] == "[SEP]" and len(last.tokens) == 8


def test_padding_and_prediction_features(tmp_path):
    tokenizer = _tokenizer(tmp_path, ["a", "b", "what"])
    example = SquadExample(qas_id="x", question_text="What?",
                           doc_tokens=["a", "b"])
    [feature] = squad_features.generate_features(
        [example], tokenizer, max_seq_length=10, doc_stride=3,
        max_query_length=5, is_training=False)
    # "What?" -> what [UNK]; "?" is not in this vocabulary.
    assert feature.tokens == ["[CLS]", "what", "[UNK]", "[SEP]", "a", "b",
                              "[SEP]"]
    assert feature.input_ids[7:] == [0, 0, 0]
    assert feature.input_mask == [1] * 7 + [0] * 3
    assert feature.segment_ids == [0, 0, 0, 0, 1, 1, 1, 0, 0, 0]
    assert feature.start_position is None and feature.is_impossible is None


def test_query_is_truncated(tmp_path):
    tokenizer = _tokenizer(tmp_path, ["a", "q"])
    example = SquadExample(qas_id="x", question_text="q " * 10,
                           doc_tokens=["a"])
    [feature] = squad_features.generate_features(
        [example], tokenizer, 16, 4, max_query_length=3, is_training=False)
    assert feature.tokens == ["[CLS]", "q", "q", "q", "[SEP]", "a", "[SEP]"]


def test_improve_answer_span(tmp_path):
    tokenizer = _tokenizer(tmp_path, ["born", "(", "1895", "-", "1943", ")",
                                      ".", "japanese", "industry"])
    doc_tokens = ["born", "(1895-1943)."]
    example = SquadExample(qas_id="x", question_text="born",
                           doc_tokens=doc_tokens, orig_answer_text="1895",
                           start_position=1, end_position=1)
    [feature] = squad_features.generate_features(
        [example], tokenizer, 32, 8, 8, is_training=True)
    # Pieces: [CLS] born [SEP] born ( 1895 - 1943 ) . [SEP]
    assert feature.tokens[feature.start_position:feature.end_position + 1] == [
        "1895"]
    # "Japan" annotated inside "Japanese": no piece sequence spells it, so
    # the whole word stays the answer.
    example = SquadExample(qas_id="y", question_text="born",
                           doc_tokens=["japanese", "industry"],
                           orig_answer_text="Japan", start_position=0,
                           end_position=0)
    [feature] = squad_features.generate_features(
        [example], tokenizer, 32, 8, 8, is_training=True)
    assert feature.tokens[feature.start_position:feature.end_position + 1] == [
        "japanese"]


def test_impossible_examples_point_at_cls(tmp_path):
    tokenizer = _tokenizer(tmp_path, ["a", "b", "c"])
    example = SquadExample(qas_id="x", question_text="a",
                           doc_tokens=["a", "b", "c"], orig_answer_text="",
                           start_position=-1, end_position=-1,
                           is_impossible=True)
    features = list(squad_features.generate_features(
        [example], tokenizer, 6, 1, 1, is_training=True))
    assert len(features) == 2  # Windows (0, 2) and (1, 2).
    assert all((f.start_position, f.end_position, f.is_impossible)
               == (0, 0, True) for f in features)


def test_bad_lengths_are_explained(tmp_path):
    tokenizer = _tokenizer(tmp_path, ["a"])
    example = SquadExample(qas_id="x", question_text="a", doc_tokens=["a"])
    with pytest.raises(ValueError, match=r"The max_seq_length \(67\) must be "
                                         r"greater than max_query_length "
                                         r"\(64\) \+ 3"):
        list(squad_features.generate_features([example], tokenizer, 67, 128,
                                              64, False))
    with pytest.raises(ValueError, match="doc_stride must be positive"):
        list(squad_features.generate_features([example], tokenizer, 384, 0,
                                              64, False))


# -- against Model Garden -----------------------------------------------------

def _model_garden_features(path, vocab_file, do_lower_case, version_2,
                           is_training, max_seq_length, doc_stride,
                           max_query_length):
    from official.nlp.data import squad_lib
    from official.nlp.tools import tokenization as mg_tokenization
    examples = squad_lib.read_squad_examples(path, is_training, version_2)
    tokenizer = mg_tokenization.FullTokenizer(vocab_file, do_lower_case)
    features = []
    if is_training:
        squad_lib.convert_examples_to_features(
            examples, tokenizer, max_seq_length, doc_stride,
            max_query_length, True, features.append)
    else:
        # batch_size=1: Model Garden adds no padding features.
        squad_lib.convert_examples_to_features(
            examples, tokenizer, max_seq_length, doc_stride,
            max_query_length, False,
            lambda feature, is_padding: features.append(feature),
            batch_size=1)
    return features


@pytest.mark.parametrize("vocab, do_lower_case, version_2, lengths", [
    ("uncased", True, False, (64, 16, 12)),
    ("uncased", True, True, (128, 48, 30)),
    ("cased", False, True, (64, 20, 16)),
])
@pytest.mark.parametrize("is_training", [True, False])
def test_features_match_model_garden(tmp_path, uncased_vocab_file,
                                     cased_tiny_dir, vocab, do_lower_case,
                                     version_2, lengths, is_training):
    vocab_file = str(uncased_vocab_file if vocab == "uncased"
                     else cased_tiny_dir / "vocab.txt")
    max_seq_length, doc_stride, max_query_length = lengths
    path = squad_testdata.generated_squad_file(
        tmp_path, seed=5, num_paragraphs=12, version_2=version_2)
    examples = squad_examples.read_squad_examples(path, is_training,
                                                  version_2)
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
    ours = list(squad_features.generate_features(
        examples, tokenizer, max_seq_length, doc_stride, max_query_length,
        is_training))
    theirs = _model_garden_features(path, vocab_file, do_lower_case,
                                    version_2, is_training, *lengths)
    assert len(ours) == len(theirs)
    assert len(ours) > 2 * len(examples)  # Many documents need windows.
    for a, b in zip(ours, theirs):
        for field in ("unique_id", "example_index", "doc_span_index",
                      "tokens", "token_to_orig_map", "token_is_max_context",
                      "input_ids", "input_mask", "segment_ids"):
            assert getattr(a, field) == getattr(b, field), (field, a.unique_id)
        if is_training:
            assert (a.start_position, a.end_position) == (
                b.start_position, b.end_position), a.unique_id
            # Model Garden marks answerless windows impossible; Google's
            # (and ours) keeps the example's flag.
            assert a.is_impossible == examples[a.example_index].is_impossible
    if is_training:
        answered = sum(f.start_position > 0 for f in ours)
        assert answered > len(examples) / 2


def test_convert_examples_to_features_streams(tmp_path, uncased_vocab_file):
    path = squad_testdata.generated_squad_file(tmp_path, seed=2,
                                               num_paragraphs=3)
    examples = squad_examples.read_squad_examples(path, True)
    tokenizer = tokenization.FullTokenizer(str(uncased_vocab_file), True)
    generator = squad_features.generate_features(
        examples, tokenizer, 64, 16, 12, True)
    first = next(generator)  # Lazily: one feature at a time.
    assert first.unique_id == squad_features.BASE_UNIQUE_ID
    seen = []
    count = squad_features.convert_examples_to_features(
        examples, tokenizer, 64, 16, 12, True, seen.append)
    assert count == len(seen) == 1 + sum(1 for _ in generator)


# -- records ------------------------------------------------------------------

def _some_features(tmp_path, uncased_vocab_file, is_training):
    path = squad_testdata.generated_squad_file(tmp_path, seed=4,
                                               num_paragraphs=3)
    examples = squad_examples.read_squad_examples(path, is_training)
    tokenizer = tokenization.FullTokenizer(str(uncased_vocab_file), True)
    return list(squad_features.generate_features(
        examples, tokenizer, 48, 16, 12, is_training))


@pytest.mark.parametrize("is_training", [True, False])
def test_records_round_trip(tmp_path, uncased_vocab_file, is_training):
    features = _some_features(tmp_path, uncased_vocab_file, is_training)
    record_file = tmp_path / "out" / "train.tf_record"
    with squad_features.FeatureWriter(record_file, is_training) as writer:
        for feature in features:
            writer.process_feature(feature)
        # Under its real name only once complete.
        assert not record_file.exists()
    assert writer.num_features == len(features)
    assert sorted(os.listdir(record_file.parent)) == ["train.tf_record"]

    # Google's record layout, parsed without our reader.
    raw = next(iter(tf.data.TFRecordDataset(str(record_file))))
    parsed = tf.train.Example.FromString(raw.numpy()).features.feature
    expected_keys = {"unique_ids", "input_ids", "input_mask", "segment_ids"}
    if is_training:
        expected_keys |= {"start_positions", "end_positions", "is_impossible"}
    assert set(parsed) == expected_keys
    assert list(parsed["input_ids"].int64_list.value) == features[0].input_ids

    dataset = squad_features.read_tfrecord(record_file, 48, is_training)
    arrays = squad_features.features_to_arrays(features, is_training)
    rows = list(dataset.as_numpy_iterator())
    assert len(rows) == len(features)
    for name, values in arrays.items():
        np.testing.assert_array_equal(np.stack([r[name] for r in rows]),
                                      values)
    in_memory = next(iter(squad_features.dataset_from_features(
        features, is_training)))
    assert in_memory["unique_ids"].dtype == tf.int64
    assert in_memory["input_ids"].dtype == tf.int32


def test_aborted_writer_leaves_nothing(tmp_path, uncased_vocab_file):
    features = _some_features(tmp_path, uncased_vocab_file, True)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="stop"):
        with squad_features.FeatureWriter(out / "x.tf_record", True) as w:
            w.process_feature(features[0])
            raise RuntimeError("stop")
    assert os.listdir(out) == []


def test_missing_record_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.tf_record"):
        squad_features.read_tfrecord(tmp_path / "nothing.tf_record", 8, False)


def test_without_model_inputs_keeps_what_postprocessing_needs(
        tmp_path, uncased_vocab_file):
    feature = _some_features(tmp_path, uncased_vocab_file, False)[0]
    slim = feature.without_model_inputs()
    assert slim.input_ids is None and slim.segment_ids is None
    assert slim.tokens == feature.tokens
    assert slim.token_to_orig_map == feature.token_to_orig_map
    assert feature.input_ids is not None
