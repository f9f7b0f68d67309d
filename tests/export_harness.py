"""The export tests' shared checkpoints, inputs and runner runs.

`test_export_saved_model.py` (SavedModels) and `test_export_onnx.py` (ONNX,
TFLite) check the same thing for different formats: an export of a
checkpoint serves what the runner writes for it. Both use the one workspace
built here and the runners' output files of one set of runs, each made once
per test session, not once per module (the session-scoped fixtures
`export_workspace`, `classifier_runs`, `squad_run`, `tagging_runs` and
`multiple_choice_run` in `conftest.py` call the functions here).

The workspace: Google-format checkpoints with a classifier head, a SQuAD
head, a tagging head (softmax, and with a CRF) and a multiple-choice head,
the vocabularies and configs beside them, and the inputs (MRPC pairs, CoLA
texts, SQuAD questions, CoNLL sentences, multiple-choice JSON lines). The
runs: `run_classifier.py`, `run_squad.py`, `run_tagging.py` and
`run_multiple_choice.py --do_predict` on those checkpoints, each runner's
`run` called in this process (`runner_harness.run_in_process`: the same
code and output files as `python run_x.py`, without 5-8 s of `import
tensorflow` per run). The inputs are chosen to exercise the in-graph steps:
pair truncation, an empty second text (or choice), lower-casing and
accents, punctuation glued to words, several whitespace kinds, words
outside the vocabulary, contexts and sentences spanning several windows and
questions longer than `--max_query_length`.

Also Google's `extract_features.py` golden output, the reference of the
embeddings exports (`golden_embedding_lines`,
`assert_embeddings_are_googles`).
"""

import gzip
import json

import numpy as np

from runner_harness import REPO_ROOT, run_in_process

GOLDEN = REPO_ROOT / "tests" / "golden"
GOLDEN_MODEL_DIR = GOLDEN / "models" / "cased_tiny"
GOLDEN_MODEL = GOLDEN_MODEL_DIR / "bert_model.ckpt"
EXTRACT_FEATURES = GOLDEN / "extract_features"

CLASSIFIER_SEQ_LENGTH = 24
SQUAD_FLAGS = ["--max_seq_length=48", "--doc_stride=12",
               "--max_query_length=10", "--n_best_size=7",
               "--max_answer_length=6"]
# The threshold makes some questions answer "" and others not.
SQUAD_V2_FLAGS = ["--version_2_with_negative=true",
                  "--null_score_diff_threshold=-2.0"]

PAIRS = [
    ("The Tragedy of Hamlet, Prince of Denmark", "Shakespeare homepage"),
    ("Who's there?", ""),  # an empty second text: the one-text layout
    ("Nay, answer me: stand, and unfold yourself.",
     "Long live the king! " * 6),  # b is cut, then both
    ("Bernardo? " * 12, "He."),  # a is cut
    ("Café Ünïcode façade — naïve résumé", "ĞÜŞİÖÇ ΣΊΣΥΦΟΣ ß"),
    ("x" * 230 + " thin\u2009space\u00a0nbsp", "中文字 and 😀 emoji"),
]
SINGLE_TEXTS = [a for a, _ in PAIRS] + ["", "   "]

QUESTIONS = [
    ("Who is there?",
     "Bernardo (1895). Who's there? Nay, answer me:  stand,\tand unfold "
     "yourself.\nLong live the king! Bernardo? He. You come most "
     "carefully upon your hour."),
    ("What did the ghost of the dead king say to the prince, and when, "
     "and why?",  # longer than --max_query_length
     "Tis now struck twelve; get thee to bed, Francisco. For this relief "
     "much thanks: 'tis bitter cold, And I am sick at heart. Have you had "
     "quiet guard? Not a mouse stirring."),
    ("Où est le café?",
     "Le CAFÉ «Ça-va» est à Paris\u202fdepuis 1895—naïvement; l’été "
     "ΣΊΣΥΦΟΣ İstanbul 中文字 😀 x" + "y" * 210 + " fin."),
    ("Short?", "One"),
]

# Tagging: sentences of words as a CoNLL file holds them (a word per line),
# exercising what the export must do as run_tagging.py does: words glued
# to punctuation (several pieces, labelled at the first), accents, a word
# that tokenizes to nothing (U+200B is deleted: "[UNK]"), a word over 200
# characters ("[UNK]"), a word of more pieces than a window holds (cut), a
# Chinese word (a piece per character), sentences longer than a window.
TAGGING_LABELS = ["B-LOC", "B-PER", "I-PER", "O"]
TAGGING_SEQ_LENGTH, TAGGING_STRIDE = 16, 5
TAGGING_FLAGS = [f"--max_seq_length={TAGGING_SEQ_LENGTH}",
                 f"--doc_stride={TAGGING_STRIDE}"]
TAGGING_SENTENCES = [
    "The Tragedy of Hamlet, Prince of Denmark".split(),
    ["Who's", "there?"],
    ("Nay, answer me: stand, and unfold yourself. Long live the king! "
     "Bernardo? He. You come most carefully upon your hour.").split(),
    ["Café", "Ünïcode", "façade", "\u200b", "naïve", "x" * 230, "中文字",
     "résumé"],
    ["!" * 20, "Francisco", "!" * 3],
    ["Bernardo"],
]

# Multiple choice: JSON lines with and without a context, a question and
# choices, some long enough to be cut, one empty (the one-text layout).
MULTIPLE_CHOICE_SEQ_LENGTH = 24
MULTIPLE_CHOICE_RECORDS = [
    {"context": "Francisco at his post. Enter to him Bernardo.",
     "question": "Who's there?",
     "choices": ["Nay, answer me", "Long live the king!", "Bernardo?"]},
    {"question": "Tis now struck twelve; get thee to bed, Francisco. " * 3,
     "choices": ["For this relief much thanks", "",
                 "'tis bitter cold, And I am sick at heart." * 2]},
    {"context": "Café Ünïcode", "question": "façade?",
     "choices": ["naïve", "résumé", "中文字 😀"]},
]


def write_checkpoint(model, prefix, seed, head_scale):
    """Random weights (heads scaled up, so that candidates are far apart),
    written as a Google-format checkpoint; returns `prefix`."""
    from bert_tf import checkpoints
    from modeling_harness import randomize
    randomize(model, seed=seed)
    for variable in model.weights:
        if not variable.path.startswith("bert/"):
            variable.assign(variable * head_scale)
    checkpoints.save_checkpoint(
        {checkpoints.variable_name(v): v for v in model.weights}, prefix)
    return prefix


def _head_on_pretrained(model, pretrained, prefix, seed, head_scale):
    """The pretrained encoder with a random head (each head variable scaled
    by `head_scale(path)`), written as a Google-format checkpoint."""
    from bert_tf import checkpoints
    from modeling_harness import randomize
    randomize(model, seed=seed)
    checkpoints.load_checkpoint(
        [v for v in model.weights if v.path.startswith("bert/")], pretrained)
    for variable in model.weights:
        if not variable.path.startswith("bert/"):
            variable.assign(variable * head_scale(variable.path))
    checkpoints.save_checkpoint(
        {checkpoints.variable_name(v): v for v in model.weights}, prefix)


def _write_tsv(path, rows):
    path.write_text("".join("\t".join(row) + "\n" for row in rows),
                    encoding="utf-8")


def make_export_workspace(root):
    """Writes into the empty directory `root` the checkpoints
    (`classifier/`, `squad/`, `tagging/`, `tagging_crf/`,
    `multiple_choice/`), `cased/` and `uncased/` (vocab.txt and
    bert_config.json) and the inputs (`mrpc/test.tsv`, `cola/test.tsv`,
    `questions.json`, `tagging_test.txt`, `choices.jsonl`); returns
    `root`."""
    from bert_tf.config import BertConfig
    from bert_tf.tasks.classification.task import ClassificationModel
    from bert_tf.tasks.multiple_choice.task import MultipleChoiceModel
    from bert_tf.tasks.squad.task import SquadModel
    from bert_tf.tasks.tagging.task import TaggingModel
    (root / "cased").mkdir()
    for name in ("vocab.txt", "bert_config.json"):
        (root / "cased" / name).write_bytes(
            (GOLDEN_MODEL_DIR / name).read_bytes())
    config = BertConfig.from_json_file(GOLDEN_MODEL_DIR / "bert_config.json")
    write_checkpoint(ClassificationModel(config, 2),
                     root / "classifier" / "model.ckpt", seed=1,
                     head_scale=30.0)

    (root / "uncased").mkdir()
    (root / "uncased" / "vocab.txt").write_bytes(
        (GOLDEN / "models" / "uncased_vocab.txt").read_bytes())
    uncased_config = config.replace(vocab_size=30522)
    uncased_config.to_json_file(root / "uncased" / "bert_config.json")
    write_checkpoint(SquadModel(uncased_config),
                     root / "squad" / "model.ckpt", seed=2, head_scale=30.0)

    # Tagging: the same weights with and without a CRF (transitions made
    # strong enough to overrule some words' own best label), on the golden
    # pretrained encoder (a random one gives every word the same label).
    for use_crf in (False, True):
        name = "tagging_crf" if use_crf else "tagging"
        _head_on_pretrained(
            TaggingModel(config, len(TAGGING_LABELS), use_crf=use_crf),
            GOLDEN_MODEL, root / name / "model.ckpt", seed=3,
            head_scale=lambda path: 10.0 if "crf" in path else 3.0)
        # As run_tagging.py leaves it in its --output_dir.
        (root / name / "label_list.txt").write_text(
            "".join(f"{label}\n" for label in TAGGING_LABELS))
    (root / "tagging_test.txt").write_text("".join(
        "".join(f"{word}\n" for word in words) + "\n"
        for words in TAGGING_SENTENCES), encoding="utf-8")

    _head_on_pretrained(MultipleChoiceModel(config), GOLDEN_MODEL,
                        root / "multiple_choice" / "model.ckpt", seed=4,
                        head_scale=lambda path: 10.0)
    (root / "choices.jsonl").write_text("".join(
        json.dumps(record) + "\n" for record in MULTIPLE_CHOICE_RECORDS),
        encoding="utf-8")

    mrpc = root / "mrpc"
    mrpc.mkdir()
    _write_tsv(mrpc / "test.tsv",
               [["index", "#1 ID", "#2 ID", "#1 String", "#2 String"]]
               + [[str(i), "1", "2", a, b] for i, (a, b) in enumerate(PAIRS)])
    cola = root / "cola"
    cola.mkdir()
    _write_tsv(cola / "test.tsv", [["index", "sentence"]]
               + [[str(i), text] for i, text in enumerate(SINGLE_TEXTS)])
    articles = [{"title": "t", "paragraphs": [
        {"context": context,
         "qas": [{"id": f"q{i}", "question": question}]}]}
        for i, (question, context) in enumerate(QUESTIONS)]
    (root / "questions.json").write_text(
        json.dumps({"version": "1.1", "data": articles}), encoding="utf-8")
    return root


def _run_runner(program, workspace, model, *flag_list):
    """`python <program>.py --vocab_file=... --bert_config_file=... flags`
    of the `model` directory (`cased`, `uncased`), run in this process."""
    import importlib
    run_in_process(importlib.import_module(program), *flag_list,
                   workspace=workspace / model)


def classifier_predictions(workspace):
    """run_classifier.py --do_predict's test_results.tsv of MRPC (pairs) and
    CoLA (one text): {"mrpc": array, "cola": array}."""
    results = {}
    for task in ("mrpc", "cola"):
        output_dir = workspace / f"{task}_output"
        _run_runner("run_classifier", workspace, "cased",
                    f"--task_name={task}", "--do_predict=true",
                    "--do_lower_case=false",
                    f"--data_dir={workspace / task}",
                    f"--init_checkpoint="
                    f"{workspace / 'classifier' / 'model.ckpt'}",
                    f"--max_seq_length={CLASSIFIER_SEQ_LENGTH}",
                    f"--output_dir={output_dir}")
        results[task] = np.loadtxt(output_dir / "test_results.tsv",
                                   delimiter="\t", ndmin=2)
    return results


def squad_predictions(workspace, name, *extra_flags):
    """run_squad.py --do_predict on `questions.json` into `workspace/name`:
    its predictions.json and nbest_predictions.json."""
    output_dir = workspace / name
    _run_runner("run_squad", workspace, "uncased", "--do_predict=true",
                f"--predict_file={workspace / 'questions.json'}",
                f"--init_checkpoint={workspace / 'squad' / 'model.ckpt'}",
                f"--output_dir={output_dir}", *SQUAD_FLAGS, *extra_flags)
    read = lambda name: json.loads(  # noqa: E731
        (output_dir / name).read_text(encoding="utf-8"))
    return read("predictions.json"), read("nbest_predictions.json")


def _labels_by_sentence(output_dir):
    """Each sentence's labels in run_tagging.py's test_predictions.txt (the
    predict file with a label column appended)."""
    sentences, labels = [], []
    lines = (output_dir / "test_predictions.txt").read_text(
        encoding="utf-8").split("\n")
    for line in lines:
        if line.strip():
            labels.append(line.split()[-1])
        elif labels:
            sentences.append(labels)
            labels = []
    return sentences


def tagging_predictions(workspace):
    """run_tagging.py --do_predict's labels of each sentence of
    `tagging_test.txt`, by the softmax and the CRF tagger:
    {"tagging": [[label, ...], ...], "tagging_crf": ...}."""
    results = {}
    for name in ("tagging", "tagging_crf"):
        output_dir = workspace / f"{name}_output"
        _run_runner("run_tagging", workspace, "cased", "--do_predict=true",
                    "--do_lower_case=false", *TAGGING_FLAGS,
                    f"--predict_file={workspace / 'tagging_test.txt'}",
                    f"--init_checkpoint={workspace / name / 'model.ckpt'}",
                    f"--output_dir={output_dir}",
                    *(["--use_crf=true"] if name == "tagging_crf" else []))
        results[name] = _labels_by_sentence(output_dir)
    return results


def multiple_choice_predictions(workspace):
    """run_multiple_choice.py --do_predict's test_results.tsv of
    `choices.jsonl`, an array."""
    output_dir = workspace / "multiple_choice_output"
    checkpoint = workspace / "multiple_choice" / "model.ckpt"
    _run_runner("run_multiple_choice", workspace, "cased",
                "--do_predict=true", "--do_lower_case=false",
                "--input_format=jsonl",
                f"--predict_file={workspace / 'choices.jsonl'}",
                f"--init_checkpoint={checkpoint}",
                f"--max_seq_length={MULTIPLE_CHOICE_SEQ_LENGTH}",
                f"--output_dir={output_dir}")
    return np.loadtxt(output_dir / "test_results.tsv", delimiter="\t",
                      ndmin=2)


# -- Google's extract_features.py: the embeddings exports' reference --------

def golden_embedding_lines(count=4):
    """The first `count` one-text lines of extract_features' golden input
    (Google's " ||| " marks a pair): (their indexes, the lines)."""
    lines = (EXTRACT_FEATURES / "input.txt").read_text(
        encoding="utf-8").splitlines()
    indexes = [i for i, line in enumerate(lines) if "|||" not in line][:count]
    return indexes, [lines[i] for i in indexes]


def assert_embeddings_are_googles(outputs, indexes, atol):
    """An embeddings export's `mean_pooled` and `pooled_output` rows (one per
    golden line of `indexes`) are Google's: its extract_features.py last
    layer averaged over the tokens, and the golden checkpoint's pooler
    (tanh of [CLS] x kernel + bias) computed here in numpy."""
    import tensorflow as tf
    with gzip.open(EXTRACT_FEATURES / "expected_output.jsonl.gz", "rt",
                   encoding="utf-8") as records:
        golden = [json.loads(line) for line in records]
    reader = tf.train.load_checkpoint(str(GOLDEN_MODEL))
    kernel = reader.get_tensor("bert/pooler/dense/kernel")
    bias = reader.get_tensor("bert/pooler/dense/bias")
    for row, index in enumerate(indexes):
        last_layer = np.array([
            next(layer["values"] for layer in feature["layers"]
                 if layer["index"] == -1)
            for feature in golden[index]["features"]])
        np.testing.assert_allclose(np.asarray(outputs["mean_pooled"][row]),
                                   last_layer.mean(axis=0), atol=atol)
        np.testing.assert_allclose(np.asarray(outputs["pooled_output"][row]),
                                   np.tanh(last_layer[0] @ kernel + bias),
                                   atol=atol)
