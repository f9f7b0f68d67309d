"""extract_features reproduces the JSON lines Google's script wrote.

References: Google's own output on the golden input
(`golden/extract_features/expected_output.jsonl.gz`, see the golden README)
and hand-derived expectations for parsing, truncation and formatting.
"""

import gzip
import json
import logging as python_logging

from absl import logging
import numpy as np
import pytest

from bert_tf import file_io
from bert_tf.features import extraction
from bert_tf.text import tokenization

from runner_harness import run_runner



def _golden_records(golden_dir):
    path = golden_dir / "extract_features" / "expected_output.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as reader:
        return [json.loads(line) for line in reader]


def _assert_matches_golden(output_file, golden_dir, tolerance=1e-5):
    expected = _golden_records(golden_dir)
    with open(output_file, encoding="utf-8") as reader:
        actual = [json.loads(line) for line in reader]
    assert len(actual) == len(expected)
    worst = 0.0
    for got, want in zip(actual, expected):
        assert list(got) == ["linex_index", "features"]
        assert got["linex_index"] == want["linex_index"]
        assert ([f["token"] for f in got["features"]]
                == [f["token"] for f in want["features"]]), got["linex_index"]
        for got_token, want_token in zip(got["features"], want["features"]):
            assert ([layer["index"] for layer in got_token["layers"]]
                    == [layer["index"] for layer in want_token["layers"]])
            for got_layer, want_layer in zip(got_token["layers"],
                                             want_token["layers"]):
                assert len(got_layer["values"]) == len(want_layer["values"])
                difference = np.max(np.abs(
                    np.array(got_layer["values"])
                    - np.array(want_layer["values"])))
                worst = max(worst, float(difference))
    assert worst <= tolerance, f"largest difference {worst}"


def _golden_arguments(golden_dir):
    model_dir = golden_dir / "models" / "cased_tiny"
    return dict(
        input_file=golden_dir / "extract_features" / "input.txt",
        vocab_file=model_dir / "vocab.txt",
        bert_config_file=model_dir / "bert_config.json",
        init_checkpoint=model_dir / "bert_model.ckpt",
        layers="-1,-2", max_seq_length=48, do_lower_case=False)


def test_library_reproduces_google_output(golden_dir, tmp_path):
    output_file = tmp_path / "features.jsonl"
    # batch_size 5 (Google's run used 4): 32 examples leave a partial last
    # batch, whose padding must not disturb the real rows.
    count = extraction.extract_features(
        output_file=output_file, batch_size=5, **_golden_arguments(golden_dir))
    assert count == 32
    _assert_matches_golden(output_file, golden_dir)
    assert [p.name for p in tmp_path.iterdir()] == ["features.jsonl"]


def test_script_reproduces_google_output(golden_dir, tmp_path):
    arguments = _golden_arguments(golden_dir)
    output_file = tmp_path / "out" / "features.jsonl"
    output_file.parent.mkdir()
    flags = [f"--output_file={output_file}", "--batch_size=4",
             "--do_lower_case=False"]
    flags += [f"--{name}={value}" for name, value in arguments.items()
              if name != "do_lower_case"]
    result = run_runner("extract_features.py", None, *flags, cwd=tmp_path,
                        expect_success=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Wrote features of 32 examples to {output_file}" in result.stdout
    _assert_matches_golden(output_file, golden_dir)
    # Google's per-example lines (25 of them) only with --verbosity=1.
    assert "input_ids: " not in result.stderr
    assert "*** Example ***" not in result.stderr


def test_read_examples_splits_pairs_as_google(tmp_path):
    input_file = tmp_path / "input.txt"
    # CRLF (TensorFlow's line reader drops "\r"), a blank line, two
    # separators (split at the last), surrounding spaces, invalid UTF-8, a
    # last line of only "\r" (the reader ends there, as at end of file).
    input_file.write_bytes(
        b"one\r\ntwo ||| three\n\n  a ||| b ||| c  \nx|||y\nbad\xffbyte\n\r")
    examples = extraction.read_examples(input_file)
    assert [(e.unique_id, e.text_a, e.text_b) for e in examples] == [
        (0, "one", None),
        (1, "two", "three"),
        (2, "", None),
        (3, "a ||| b", "c"),
        (4, "x|||y", None),
        (5, "badbyte", None),
    ]


def test_examples_are_logged_in_full_only_at_verbosity_1(small_tokenizer,
                                                        caplog):
    examples = [extraction.InputExample(i, "the cat sat", None)
                for i in range(7)]
    caplog.set_level(python_logging.DEBUG)  # what absl lets through
    previous = logging.get_verbosity()
    try:
        for verbosity, expected in ((logging.INFO, 0), (logging.DEBUG, 5)):
            caplog.clear()
            logging.set_verbosity(verbosity)
            extraction.convert_examples_to_features(examples, 8,
                                                    small_tokenizer)
            messages = [record.getMessage() for record in caplog.records]
            assert messages.count("*** Example ***") == expected
            assert messages.count("input_ids: 2 4 5 6 3 0 0 0") == expected
    finally:
        logging.set_verbosity(previous)


@pytest.fixture
def small_tokenizer(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join([
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat",
        "a", "dog", "."]) + "\n", encoding="utf-8")
    return tokenization.FullTokenizer(vocab_file, do_lower_case=True)


def _features(text_a, text_b, seq_length, tokenizer):
    example = extraction.InputExample(0, text_a, text_b)
    return extraction.convert_example_to_features(example, seq_length,
                                                  tokenizer)


def test_pair_truncation_pops_from_the_longer_side(small_tokenizer):
    # 6 + 3 tokens into 8 - 3 = 5: a loses three (6>3, 5>3, 4>3), then on
    # the 3/3 tie b loses one.
    feature = _features("The cat sat on the mat", "a dog .", 8,
                        small_tokenizer)
    assert feature.tokens == ["[CLS]", "the", "cat", "sat", "[SEP]", "a",
                              "dog", "[SEP]"]
    assert feature.input_ids == [2, 4, 5, 6, 3, 9, 10, 3]
    assert feature.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1]
    assert feature.input_mask == [1] * 8


def test_single_text_is_cut_and_padded(small_tokenizer):
    feature = _features("the cat sat on the mat .", None, 6, small_tokenizer)
    assert feature.tokens == ["[CLS]", "the", "cat", "sat", "on", "[SEP]"]
    assert feature.input_ids == [2, 4, 5, 6, 7, 3]
    feature = _features("dog", None, 6, small_tokenizer)
    assert feature.tokens == ["[CLS]", "dog", "[SEP]"]
    assert feature.input_ids == [2, 10, 3, 0, 0, 0]
    assert feature.input_mask == [1, 1, 1, 0, 0, 0]
    assert feature.segment_ids == [0] * 6
    # A second text without tokens leaves a single-text example.
    feature = _features("cat", "\u200b", 6, small_tokenizer)
    assert feature.tokens == ["[CLS]", "cat", "[SEP]"]


def test_feature_json_is_googles_format():
    feature = extraction.ExtractionFeatures(
        unique_id=7, tokens=["[CLS]", "hi", "[SEP]"], input_ids=[2, 5, 3, 0],
        input_mask=[1, 1, 1, 0], segment_ids=[0, 0, 0, 0])
    outputs = np.array([[[0.5, 1 / 3], [-1.25, 2.0], [0.0, -1e-7]],
                        [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]], np.float32)
    text = json.dumps(extraction.feature_json(feature, outputs, [-1, -2]))
    assert text == (
        '{"linex_index": 7, "features": ['
        '{"token": "[CLS]", "layers": [{"index": -1, "values": [0.5, 0.333333]}, '
        '{"index": -2, "values": [1.0, 2.0]}]}, '
        '{"token": "hi", "layers": [{"index": -1, "values": [-1.25, 2.0]}, '
        '{"index": -2, "values": [3.0, 4.0]}]}, '
        '{"token": "[SEP]", "layers": [{"index": -1, "values": [0.0, -0.0]}, '
        '{"index": -2, "values": [5.0, 6.0]}]}]}')


def test_layer_indexes_parse_and_bad_entry_is_named():
    assert extraction.parse_layer_indexes("-1, -2,0") == [-1, -2, 0]
    with pytest.raises(extraction.FeatureExtractionError,
                       match=r"layers: 'last' in '-1,last' is not a layer"):
        extraction.parse_layer_indexes("-1,last")


def test_layer_index_out_of_range_is_named(golden_dir, tmp_path):
    arguments = _golden_arguments(golden_dir)
    arguments["layers"] = "-1,-3"
    with pytest.raises(extraction.FeatureExtractionError,
                       match=r"layer index -3 is out of range for a model "
                             r"with 2 layers .*valid indexes are -2\.\.1"):
        extraction.extract_features(output_file=tmp_path / "out.jsonl",
                                    **arguments)
    assert not list(tmp_path.iterdir())


def test_missing_input_file_is_named(golden_dir, tmp_path):
    arguments = _golden_arguments(golden_dir)
    arguments["input_file"] = tmp_path / "no_such_input.txt"
    with pytest.raises(FileNotFoundError,
                       match=r"input file .*no_such_input.txt does not exist"):
        extraction.extract_features(output_file=tmp_path / "out.jsonl",
                                    **arguments)
    assert not (tmp_path / "out.jsonl").exists()


def test_empty_input_file_is_named(golden_dir, tmp_path):
    arguments = _golden_arguments(golden_dir)
    arguments["input_file"] = tmp_path / "empty.txt"
    arguments["input_file"].write_bytes(b"")
    with pytest.raises(extraction.FeatureExtractionError,
                       match=r"input file .*empty.txt is empty"):
        extraction.extract_features(output_file=tmp_path / "out.jsonl",
                                    **arguments)
    assert not (tmp_path / "out.jsonl").exists()


def test_failed_write_keeps_the_previous_output(tmp_path):
    output_file = tmp_path / "features.jsonl"
    output_file.write_text("previous results\n", encoding="utf-8")
    with pytest.raises(RuntimeError):
        with file_io.atomic_write(output_file) as writer:
            writer.write("partial")
            raise RuntimeError("interrupted")
    assert output_file.read_text(encoding="utf-8") == "previous results\n"
    assert [p.name for p in tmp_path.iterdir()] == ["features.jsonl"]
