"""`--causal_attention` in every fine-tuning runner, `run_squad.py
--span_bilstm` and `run_tagging.py --tagging_bilstm`: the flags reach the
models.

run_classifier.py predicts from one random checkpoint with and without the
flag; each run's probabilities are checked against the model built
directly (with the flag's setting) on the features the runner wrote. The
other runners are stopped where they build their task, and the task's
arguments are read. The span BiLSTM is trained end to end (slow) and its
fine-tuned checkpoint predicts again through `--init_checkpoint`.
"""

import json
import random

from absl import flags
import numpy as np
import pytest

from runner_harness import read_eval_results, run_runner
import run_classifier
import run_multiple_choice
import run_squad
import run_tagging
from tests.tasks.squad.test_run_squad import (
    LENGTH_FLAGS as SQUAD_LENGTH_FLAGS)
from tests.tasks.squad.test_run_squad import TINY_CONFIG as SQUAD_CONFIG
from tests.tasks.squad.test_run_squad import VOCAB as SQUAD_VOCAB
from tests.tasks.squad.test_run_squad import cue_squad

WORDS = [f"w{i}" for i in range(30)]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
TINY_CONFIG = {"vocab_size": len(VOCAB), "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 2,
               "intermediate_size": 64, "max_position_embeddings": 64,
               "type_vocab_size": 2}
MAX_SEQ_LENGTH = 16


def _sentence(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 10)))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("causal_runners")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (root / "bert_config.json").write_text(json.dumps(TINY_CONFIG))
    rng = random.Random(7)
    sst = root / "sst"
    sst.mkdir()
    (sst / "train.tsv").write_text("sentence\tlabel\n" + "".join(
        f"{_sentence(rng)}\t{rng.randrange(2)}\n" for _ in range(20)))
    (sst / "test.tsv").write_text("index\tsentence\n" + "".join(
        f"{index}\t{_sentence(rng)}\n" for index in range(13)))
    labelled = root / "multi_label"
    labelled.mkdir()
    (labelled / "train.tsv").write_text("sentence\tlabels\n" + "".join(
        f"{_sentence(rng)}\t{rng.choice(['a', 'b', 'a|b'])}\n"
        for _ in range(20)))
    choices = root / "multiple_choice"
    choices.mkdir()
    (choices / "train.jsonl").write_text("".join(json.dumps(
        {"question": _sentence(rng),
         "choices": [_sentence(rng) for _ in range(3)],
         "answer": rng.randrange(3)}) + "\n" for _ in range(20)))
    tagging = root / "tagging"
    tagging.mkdir()
    with open(tagging / "train.txt", "w", encoding="utf-8") as writer:
        for _ in range(20):
            for word in _sentence(rng).split():
                writer.write(f"{word} {rng.choice(['O', 'B-X', 'I-X'])}\n")
            writer.write("\n")
    return root


def _parse(runner, workspace, *args):
    flag_values = flags.FlagValues()
    runner.define_flags(flag_values)
    flag_values([runner.__name__ + ".py",
                 f"--vocab_file={workspace / 'vocab.txt'}",
                 f"--bert_config_file={workspace / 'bert_config.json'}",
                 *args])
    return flag_values


def test_every_fine_tuning_runner_has_the_flag_off_by_default(workspace):
    required = {run_classifier: ["--task_name=sst-2", "--data_dir=x"]}
    for runner in (run_classifier, run_squad, run_tagging,
                   run_multiple_choice):
        flag_values = _parse(runner, workspace, "--output_dir=x",
                             *required.get(runner, []))
        assert flag_values.causal_attention is False, runner.__name__
        assert "causal_attention" in flag_values.get_help()
    squad_flags = _parse(run_squad, workspace, "--output_dir=x")
    assert squad_flags.span_bilstm is False
    assert squad_flags.span_bilstm_units is None
    tagging_flags = _parse(run_tagging, workspace, "--output_dir=x")
    assert tagging_flags.tagging_bilstm is False
    assert tagging_flags.tagging_bilstm_units is None


# --- run_classifier.py: the flag changes the model, as built directly -------

def _random_classifier_checkpoint(workspace, directory):
    from bert_tf import checkpoints
    from bert_tf.config import BertConfig
    from bert_tf.tasks.classification.task import ClassificationModel
    from tests.modeling_harness import randomize
    config = BertConfig.from_json_file(workspace / "bert_config.json")
    model = ClassificationModel(config, 2)
    randomize(model, seed=51)
    prefix = checkpoints.save_checkpoint(
        {checkpoints.variable_name(v): v for v in model.weights},
        str(directory / "model.ckpt"))
    return config, model, prefix


def _expected_probabilities(config, weights_from, record_file, causal):
    """The runner's predict records through a `ClassificationModel` built
    here with `causal_attention=causal` and the checkpoint's weights."""
    import tensorflow as tf
    from bert_tf.tasks.classification import features as classifier_features
    from bert_tf.tasks.classification.task import ClassificationModel
    model = ClassificationModel(config, 2, causal_attention=causal)
    for target, source in zip(model.weights, weights_from.weights):
        target.assign(source)
    records = classifier_features.read_tfrecord(str(record_file),
                                                MAX_SEQ_LENGTH, False)
    features = next(iter(records.batch(1000)))
    logits = model({name: features[name] for name in
                    ("input_ids", "input_mask", "segment_ids")})["logits"]
    return tf.nn.softmax(logits).numpy()


def test_classifier_predicts_with_the_causal_model(workspace, tmp_path):
    config, model, checkpoint = _random_classifier_checkpoint(
        workspace, tmp_path / "init")
    predicted = {}
    for causal in (False, True):
        output_dir = tmp_path / f"causal_{causal}"
        flag_values = _parse(
            run_classifier, workspace, "--task_name=sst-2",
            f"--data_dir={workspace / 'sst'}", "--do_predict=true",
            f"--init_checkpoint={checkpoint}", f"--output_dir={output_dir}",
            f"--max_seq_length={MAX_SEQ_LENGTH}",
            f"--causal_attention={str(causal).lower()}")
        predicted[causal] = run_classifier.run(flag_values)["predict"]
        np.testing.assert_allclose(
            predicted[causal],
            _expected_probabilities(config, model,
                                    output_dir / "predict.tf_record",
                                    causal), atol=1e-5)
    assert predicted[True].shape == (13, 2)
    # The flag made a difference the comparison above could see.
    assert np.abs(predicted[True] - predicted[False]).max() > 1e-3


# --- the other runners hand the flag to their task ----------------------------

class _TaskBuilt(Exception):
    """Stops a runner where it builds its task."""


@pytest.fixture
def task_arguments(monkeypatch):
    """Replaces each task's constructor by one that records its keyword
    arguments and stops the run."""
    from bert_tf.tasks.classification import (
        task as classification,
        multi_label_task as multi_label,
    )
    from bert_tf.tasks.multiple_choice import task as multiple_choice
    from bert_tf.tasks.squad import task as squad
    from bert_tf.tasks.tagging import task as tagging
    seen = {}
    for task_class in (classification.ClassificationTask,
                       multi_label.MultiLabelTask,
                       multiple_choice.MultipleChoiceTask, squad.SquadTask,
                       tagging.TaggingTask):
        def stop(self, *args, _name=task_class.__name__, **kwargs):
            seen[_name] = kwargs
            raise _TaskBuilt()
        monkeypatch.setattr(task_class, "__init__", stop)
    return seen


RUNNERS = {
    "ClassificationTask": (run_classifier, [
        "--task_name=sst-2", "--data_dir={root}/sst"]),
    "MultiLabelTask": (run_classifier, [
        "--task_name=generic", "--multi_label=true",
        "--data_dir={root}/multi_label", "--label_column=labels",
        "--label_delimiter=|"]),
    "MultipleChoiceTask": (run_multiple_choice, [
        "--data_dir={root}/multiple_choice", "--input_format=jsonl"]),
    "TaggingTask": (run_tagging, [
        "--train_file={root}/tagging/train.txt"]),
}


@pytest.mark.parametrize("task_name", sorted(RUNNERS))
@pytest.mark.parametrize("causal", [False, True])
def test_runner_hands_the_flag_to_its_task(workspace, tmp_path,
                                           task_arguments, task_name,
                                           causal):
    runner, args = RUNNERS[task_name]
    flag_values = _parse(
        runner, workspace, "--do_train=true", f"--output_dir={tmp_path}",
        f"--max_seq_length={MAX_SEQ_LENGTH}",
        f"--causal_attention={str(causal).lower()}",
        *[arg.format(root=workspace) for arg in args])
    with pytest.raises(_TaskBuilt):
        runner.run(flag_values)
    assert task_arguments[task_name]["causal_attention"] is causal


@pytest.mark.parametrize("args, causal, units", [
    ([], False, None),
    (["--causal_attention=true"], True, None),
    (["--span_bilstm=true"], False, 16),  # half of hidden_size 32
    (["--causal_attention=true", "--span_bilstm=true",
      "--span_bilstm_units=5"], True, 5),
])
def test_run_squad_hands_the_flags_to_its_task(tmp_path, squad_workspace,
                                               task_arguments, args, causal,
                                               units):
    flag_values = _parse(
        run_squad, squad_workspace, "--do_train=true",
        f"--train_file={squad_workspace / 'train.json'}",
        f"--output_dir={tmp_path}", *SQUAD_LENGTH_FLAGS, *args)
    with pytest.raises(_TaskBuilt):
        run_squad.run(flag_values)
    assert task_arguments["SquadTask"]["causal_attention"] is causal
    assert task_arguments["SquadTask"]["bilstm_units"] == units


@pytest.mark.parametrize("args, message", [
    (["--span_bilstm_units=8"], "--span_bilstm_units needs --span_bilstm"),
    (["--span_bilstm=true", "--span_bilstm_units=0"],
     "--span_bilstm_units=0 must be positive"),
])
def test_bad_bilstm_flags_are_explained(tmp_path, squad_workspace, args,
                                        message):
    flag_values = _parse(
        run_squad, squad_workspace, "--do_train=true",
        f"--train_file={squad_workspace / 'train.json'}",
        f"--output_dir={tmp_path}", *SQUAD_LENGTH_FLAGS, *args)
    with pytest.raises(ValueError, match=message):
        run_squad.run(flag_values)


@pytest.mark.parametrize("args, causal, units", [
    ([], False, None),
    (["--causal_attention=true", "--tagging_bilstm=true"], True, 16),
    (["--tagging_bilstm=true", "--tagging_bilstm_units=3"], False, 3),
])
def test_run_tagging_hands_the_bilstm_to_its_task(workspace, tmp_path,
                                                  task_arguments, args,
                                                  causal, units):
    flag_values = _parse(
        run_tagging, workspace, "--do_train=true", f"--output_dir={tmp_path}",
        f"--train_file={workspace / 'tagging' / 'train.txt'}",
        f"--max_seq_length={MAX_SEQ_LENGTH}", *args)
    with pytest.raises(_TaskBuilt):
        run_tagging.run(flag_values)
    assert task_arguments["TaggingTask"]["causal_attention"] is causal
    assert task_arguments["TaggingTask"]["bilstm_units"] == units


@pytest.mark.parametrize("args, message", [
    (["--tagging_bilstm_units=8"],
     "--tagging_bilstm_units needs --tagging_bilstm"),
    (["--tagging_bilstm=true", "--tagging_bilstm_units=-1"],
     "--tagging_bilstm_units=-1 must be positive"),
])
def test_bad_tagging_bilstm_flags_are_explained(workspace, tmp_path, args,
                                                message):
    flag_values = _parse(
        run_tagging, workspace, "--do_train=true", f"--output_dir={tmp_path}",
        f"--train_file={workspace / 'tagging' / 'train.txt'}", *args)
    with pytest.raises(ValueError, match=message):
        run_tagging.run(flag_values)


# --- run_squad.py --causal_attention --span_bilstm, end to end ----------------

@pytest.fixture(scope="module")
def squad_workspace(tmp_path_factory):
    """test_run_squad's cue task: the answer is the word after "alpha"."""
    root = tmp_path_factory.mktemp("causal_squad")
    (root / "vocab.txt").write_text("\n".join(SQUAD_VOCAB) + "\n")
    (root / "bert_config.json").write_text(json.dumps(SQUAD_CONFIG))
    rng = random.Random(3)
    (root / "train.json").write_text(json.dumps(cue_squad(rng, 480,
                                                          "train")))
    (root / "dev.json").write_text(json.dumps(cue_squad(rng, 60, "dev")))
    return root


@pytest.mark.slow
def test_left_to_right_span_model_with_bilstm_learns_and_reloads(
        squad_workspace):
    root = squad_workspace
    trained = root / "trained"
    model_flags = ["--causal_attention=true", "--span_bilstm=true"]
    # 480 / 16 * 4 = 120 steps.
    run_runner("run_squad.py", root, "--do_train=true", "--do_predict=true",
               f"--train_file={root / 'train.json'}",
               f"--predict_file={root / 'dev.json'}",
               f"--output_dir={trained}", *SQUAD_LENGTH_FLAGS,
               "--train_batch_size=16", "--num_train_epochs=4",
               "--learning_rate=1e-3", "--seed=1", *model_flags)
    results = read_eval_results(trained)
    # Chance (a random span) is near 0; 120 steps reach ~70.
    assert results["exact_match"] > 50, results

    import tensorflow as tf
    shapes = dict(tf.train.list_variables(str(trained / "model.ckpt-120")))
    assert shapes["bilstm/fw/lstm_cell/kernel"] == [32, 64]
    assert shapes["bilstm/bw/lstm_cell/recurrent_kernel"] == [16, 64]
    assert shapes["bilstm/bw/lstm_cell/bias"] == [64]
    assert shapes["cls/squad/output_weights"] == [2, 32]
    # Trained: Adam slots saved with them.
    assert any(name.startswith("bilstm/fw/lstm_cell/kernel/adam_")
               for name in shapes)

    reloaded = root / "reloaded"
    run_runner("run_squad.py", root, "--do_predict=true",
               f"--predict_file={root / 'dev.json'}",
               f"--init_checkpoint={trained / 'model.ckpt-120'}",
               f"--output_dir={reloaded}", "--predict_batch_size=7",
               *SQUAD_LENGTH_FLAGS, *model_flags)
    assert (json.loads((reloaded / "predictions.json").read_text())
            == json.loads((trained / "predictions.json").read_text()))
    ours = json.loads((reloaded / "nbest_predictions.json").read_text())
    before = json.loads((trained / "nbest_predictions.json").read_text())
    for qid, entries in before.items():
        np.testing.assert_allclose(
            [[e["start_logit"], e["end_logit"]] for e in ours[qid]],
            [[e["start_logit"], e["end_logit"]] for e in entries], atol=1e-4)
