"""Sequence packing (`run_pretraining.py --pack_sequences`): fill and speed.

Records are made as a user makes them, from each of `--corpora`:
"wikipedia", gensim's Wikipedia sample (the corpus `demo.py` pretrains on,
`bert_tf.corpora.wikipedia`: long articles, which fill most rows), and
"news", gensim's Lee corpus of 300 short news articles (about 200 words
each, one document each: short documents, where packing pays), through
`create_pretraining_data.py`'s library with Google's uncased vocabulary
and Google's flags (`--dupe_factor` aside), at sequence 512 (80 masked
positions) and 128 (20). For each corpus and length:

- fill: the share of row tokens that are real tokens, one sequence per row
  (Google's records as they are) and packed (`--max_sequences_per_pack`,
  the packer of `bert_tf.pretraining.sequence_packing` over every record),
  kept in the training measurement's details;
- training: sequences per second of bert_tf's trainer on the same records,
  unpacked and packed, the same model shape (default: the demo's, 2 layers,
  hidden 128, 2 heads, intermediate 512, with the vocabulary's 30522
  entries), the same rows per batch. Each contender trains on its first
  `--steps` batches, read once into memory (so the timing is the training
  step's, not the input pipeline's), and counts the sequences they hold;
  the two contenders' timed calls alternate for `--rounds` rounds.

And a convergence check (`--parts=convergence`): the Wikipedia sample's
documents split into training and held-out ones (every
`HELD_OUT_EVERY`-th document held out), each made into records at
`--convergence_seq_length` (with `--convergence_short_seq_prob`, by
default 0.5, so that packing has short sequences to put together: with
Google's 0.1 this corpus's long articles fill most rows); for each of `--convergence_seeds`, the same
model shape trained from scratch by `run_pretraining.py` (its flags,
parsed and run in this process) with and without `--pack_sequences` on the
same first `--convergence_sequences` training records for
`--convergence_epochs` epochs: the same seed (the same initial weights and
order of sequences), the same number of sequences (a packed step holds
more of them, so the packed run takes fewer steps), the demo's learning
rate and 10% warmup. Each checkpoint is then evaluated unpacked
(`run_pretraining.py --do_eval`) on the held-out records: masked-LM and
next-sentence accuracy and loss, one measurement each, a seed per round.
Packed training matches when the difference of the contenders' medians
is within the seed spread (the larger of the two contenders' ranges over
the seeds): packing then moves the result no more than the seed does.

    python benchmarks/packing.py                         # everything
    python benchmarks/packing.py --seq_lengths=128 --rounds=3
    python benchmarks/packing.py --parts=convergence --convergence_seeds=1,2,3

Nothing is asserted about time or accuracy; the run writes a record
(`benchmarks/records.py`) that `benchmarks/performance_page.py` shows.
"""

import argparse
import math
import os
import shutil
import tempfile
import time

import harness  # first: puts the repository on the path, quiets TF logging

import numpy as np
import tensorflow as tf

UNCASED_VOCAB = harness.REPO_ROOT / "tests" / "golden" / "models" / (
    "uncased_vocab.txt")
# Google's README: 20 masked positions at sequence 128, 80 at 512.
MAX_PREDICTIONS = {128: 20, 512: 80}
PARTS = ("speed", "convergence")
# The convergence check holds out every HELD_OUT_EVERY-th document of the
# corpus (spread over it, not its last articles only): its evaluation reads
# text the runs never trained on.
HELD_OUT_EVERY = 6
# Held-out sequences per evaluation batch (every full batch is evaluated).
EVAL_BATCH_SIZE = 32
# The demo's pretraining learning rate (demo_workflow.workflow.DEFAULT),
# tuned for this model shape.
DEMO_LEARNING_RATE = 1e-3
# (eval_results key, measurement name, unit, lower is better).
CONVERGENCE_METRICS = (
    ("masked_lm_accuracy", "masked-LM accuracy", "accuracy", False),
    ("next_sentence_accuracy", "next-sentence accuracy", "accuracy", False),
    ("masked_lm_loss", "masked-LM loss", "nats", True),
    ("next_sentence_loss", "next-sentence loss", "nats", True),
)


def wikipedia_corpus(work_dir):
    """The Wikipedia sample in create_pretraining_data.py's text format
    (written once per run)."""
    from bert_tf.corpora import wikipedia
    corpus = os.path.join(work_dir, "wikipedia.txt")
    if not os.path.exists(corpus):
        wikipedia.write_corpus(wikipedia.find_gensim_wiki_dump(), corpus)
    return corpus


def news_corpus(work_dir):
    """gensim's Lee news corpus (one article a line) in
    create_pretraining_data.py's text format: one article a document, split
    into sentences as the Wikipedia sample is."""
    from bert_tf.corpora import package_files
    from bert_tf.corpora import wikipedia
    corpus = os.path.join(work_dir, "news.txt")
    if not os.path.exists(corpus):
        source = package_files.package_file(
            wikipedia.GENSIM_PACKAGE,
            os.path.join("test", "test_data", "lee_background.cor"),
            wikipedia.GENSIM_REQUIREMENT, "the Lee news corpus")
        with open(source, encoding="utf-8") as reader:
            documents = ["\n".join(wikipedia.split_sentences(line.strip()))
                         for line in reader if line.strip()]
        with open(corpus, "w", encoding="utf-8") as writer:
            writer.write("\n\n".join(documents) + "\n")
    return corpus


CORPORA = {"wikipedia": wikipedia_corpus, "news": news_corpus}
# The speed measurements' names: the Wikipedia rows keep the names of the
# records made before there was a second corpus.
CORPUS_IN_NAME = {"wikipedia": "", "news": "news articles, "}


def make_records(work_dir, seq_length, dupe_factor, corpus=None,
                 name="records", short_seq_prob=0.1):
    """create_pretraining_data.py's records of a corpus.

    Args:
      work_dir: where the records (and the Wikipedia sample) are written.
      seq_length: 128 or 512 (`MAX_PREDICTIONS`).
      dupe_factor: create_pretraining_data.py's `--dupe_factor`.
      corpus: the text file; default the Wikipedia sample.
      name: the records file's name before `-<seq_length>.tfrecord`.
      short_seq_prob: create_pretraining_data.py's `--short_seq_prob`
        (Google's default 0.1).

    Returns:
      (records path, number of records).
    """
    from bert_tf.pretraining import corpus as pretraining_corpus
    from bert_tf.pretraining import instances as pretraining_instances
    corpus = corpus or wikipedia_corpus(work_dir)
    path = os.path.join(work_dir, f"{name}-{seq_length}.tfrecord")
    count = pretraining_instances.create_pretraining_data(
        input_files=[corpus], output_files=[path],
        tokenizer=pretraining_corpus.load_tokenizer(str(UNCASED_VOCAB), True),
        max_seq_length=seq_length,
        max_predictions_per_seq=MAX_PREDICTIONS[seq_length],
        dupe_factor=dupe_factor, short_seq_prob=short_seq_prob,
        num_logged_examples=0)
    return path, count


def pretraining_task(args, seq_length, records_path, pack):
    from bert_tf.pretraining.task import PretrainingDataConfig
    from bert_tf.pretraining.task import PretrainingTask
    args.seq_length = seq_length
    return PretrainingTask(harness.bert_config(args), PretrainingDataConfig(
        input_patterns=(records_path,), max_seq_length=seq_length,
        max_predictions_per_seq=MAX_PREDICTIONS[seq_length], seed=1,
        pack_sequences=pack,
        max_sequences_per_pack=args.max_sequences_per_pack))


def fill_rates(args, seq_length, records_path):
    """(unpacked fill, packed fill, details): every record, one pass."""
    from bert_tf.pretraining import dataset
    from bert_tf.pretraining import sequence_packing
    examples = dataset.pretraining_dataset(
        records_path, 64, seq_length, MAX_PREDICTIONS[seq_length],
        is_training=False, drop_remainder=False).unbatch()
    stats = sequence_packing.PackingStats(seq_length)
    start = time.perf_counter()
    for _ in sequence_packing.packed_dataset(
            examples, 64, seq_length, MAX_PREDICTIONS[seq_length],
            args.max_sequences_per_pack, is_training=False, stats=stats):
        pass
    seconds = time.perf_counter() - start
    return stats.unpacked_fill, stats.packed_fill, {
        "sequences": stats.sequences, "packed_rows": stats.rows,
        "sequences_per_packed_row": round(
            stats.sequences / max(stats.rows, 1), 3),
        "read_and_pack_sequences_per_second": round(
            stats.sequences / seconds, 1)}


def training_function(args, task, output_dir):
    """(train, sequences per call): `--steps` cached batches per call."""
    from bert_tf.pretraining import sequence_packing
    from bert_tf.pretraining import records
    from bert_tf.tasks import base
    from bert_tf.training import optimization
    from bert_tf.training.trainer import Trainer, TrainerConfig

    batches = list(task.build_inputs(base.TRAIN, args.batch_size).take(
        args.steps).as_numpy_iterator())
    weights = sequence_packing.NEXT_SENTENCE_WEIGHTS
    sequences = sum(
        int(batch[weights].sum()) if weights in batch
        else len(batch[records.INPUT_IDS]) for batch in batches)
    stacked = {name: np.stack([batch[name] for batch in batches])
               for name in batches[0]}
    cached = tf.data.Dataset.from_tensor_slices(stacked).repeat()

    class CachedInputs(type(task)):
        def build_inputs(self, mode, per_replica_batch_size,
                         input_context=None, pack=True):
            return cached

    task.__class__ = CachedInputs
    trainer = Trainer(
        task, TrainerConfig(output_dir=output_dir,
                            train_batch_size=args.batch_size,
                            num_train_steps=10 ** 9),
        optimizer_factory=lambda: optimization.create_optimizer(
            "adamw", 1e-4, 10 ** 6, 0))
    iterator = trainer.make_train_iterator()

    def train():
        _, steps_run, loss = trainer.train_steps(iterator, args.steps)
        assert steps_run == args.steps and np.isfinite(loss), loss

    return train, sequences


# -- convergence ---------------------------------------------------------------

def split_documents(corpus, train_path, held_out_path):
    """Writes the corpus's documents to two files: every `HELD_OUT_EVERY`-th
    to `held_out_path`, the others to `train_path`.

    Returns:
      (training documents, held-out documents).
    """
    with open(corpus, encoding="utf-8") as reader:
        # The format: one sentence per line, an empty line between documents.
        documents = [document.strip("\n") for document
                     in reader.read().split("\n\n") if document.strip()]
    held_out = documents[HELD_OUT_EVERY - 1::HELD_OUT_EVERY]
    train = [document for index, document in enumerate(documents)
             if index % HELD_OUT_EVERY != HELD_OUT_EVERY - 1]
    for path, part in ((train_path, train), (held_out_path, held_out)):
        with open(path, "w", encoding="utf-8") as writer:
            writer.write("\n\n".join(part) + "\n")
    return len(train), len(held_out)


def first_records(source, destination, count):
    """Copies the first `count` records of `source` to `destination`."""
    written = 0
    with tf.io.TFRecordWriter(destination) as writer:
        for serialized in tf.data.TFRecordDataset(source).take(count):
            writer.write(serialized.numpy())
            written += 1
    return written


def run_pretraining_flags(**values):
    """run_pretraining.py's flags parsed from `--name=value` pairs, as a
    user's command line gives them (a fresh `FlagValues`)."""
    from absl import flags
    import run_pretraining
    flag_values = flags.FlagValues()
    run_pretraining.define_flags(flag_values)
    flag_values(["run_pretraining.py",
                 *(f"--{name}={value}" for name, value in values.items())])
    return flag_values


def train_and_evaluate(common, train_records, held_out_records, output_dir,
                       seed, pack, steps, eval_steps):
    """One `run_pretraining.py --do_train` run, then `--do_eval` of its
    checkpoint on the held-out records, unpacked.

    Args:
      common: flags both runs share (config, sequence length, ...).
      train_records, held_out_records: records files.
      output_dir: the run's checkpoints.
      seed: `--seed` (initial weights, order of sequences, dropout).
      pack: `--pack_sequences`.
      steps: `--num_train_steps` (10% of them warmup, as the demo's).
      eval_steps: `--max_eval_steps` of `EVAL_BATCH_SIZE` sequences.

    Returns:
      The evaluation's results dict (`eval_results.txt`'s values).
    """
    import run_pretraining
    run_pretraining.run(run_pretraining_flags(
        **common, input_file=train_records, output_dir=output_dir,
        do_train=True, seed=seed, pack_sequences=pack,
        num_train_steps=steps, num_warmup_steps=max(1, steps // 10),
        save_checkpoints_steps=steps, iterations_per_loop=min(steps, 100)))
    return run_pretraining.run(run_pretraining_flags(
        **common, input_file=held_out_records, output_dir=output_dir,
        do_eval=True, eval_batch_size=EVAL_BATCH_SIZE,
        max_eval_steps=eval_steps))


def within_seed_spread(packed, unpacked):
    """Whether packing moves a metric no more than the seed does.

    Args:
      packed, unpacked: the metric's value per seed.

    Returns:
      (within, difference of the medians (packed - unpacked), seed spread:
      the larger of the two contenders' ranges over the seeds).
    """
    summaries = [harness.records.summarize(values)
                 for values in (packed, unpacked)]
    difference = summaries[0]["median"] - summaries[1]["median"]
    spread = max(summary["max"] - summary["min"] for summary in summaries)
    return abs(difference) <= spread, difference, spread


def measure_convergence(args, record, work_dir, shape, short_shape):
    """Adds the convergence measurements (module docstring) to `record`."""
    seq_length = args.convergence_seq_length
    train_corpus = os.path.join(work_dir, "convergence-train.txt")
    held_out_corpus = os.path.join(work_dir, "convergence-held-out.txt")
    train_documents, held_out_documents = split_documents(
        wikipedia_corpus(work_dir), train_corpus, held_out_corpus)
    all_train_records, train_count = make_records(
        work_dir, seq_length, args.dupe_factor, train_corpus,
        "convergence-train", args.convergence_short_seq_prob)
    held_out_records, held_out_count = make_records(
        work_dir, seq_length, args.dupe_factor, held_out_corpus,
        "convergence-held-out", args.convergence_short_seq_prob)
    if train_count < args.convergence_sequences:
        raise SystemExit(
            f"--convergence_sequences={args.convergence_sequences}: the "
            f"training documents make only {train_count} records at "
            f"sequence {seq_length}; pass at most that many (or a higher "
            "--dupe_factor)")
    train_records = os.path.join(work_dir, "convergence-train-first.tfrecord")
    first_records(all_train_records, train_records,
                  args.convergence_sequences)
    eval_steps = held_out_count // EVAL_BATCH_SIZE
    if eval_steps == 0:
        raise SystemExit(
            f"the held-out documents make only {held_out_count} records at "
            f"sequence {seq_length}, fewer than one evaluation batch of "
            f"{EVAL_BATCH_SIZE}")
    unpacked_fill, packed_fill, fill_details = fill_rates(
        args, seq_length, train_records)
    sequences = args.convergence_sequences * args.convergence_epochs
    batch = args.convergence_batch_size
    # The same sequences in both: a packed batch of `batch` rows holds
    # `batch` * (sequences per row) of them, so fewer steps.
    steps = {"unpacked": math.ceil(sequences / batch),
             "packed": max(1, round(sequences * fill_details["packed_rows"]
                                    / (fill_details["sequences"] * batch)))}
    args.seq_length = seq_length
    config_file = os.path.join(work_dir, "convergence_bert_config.json")
    harness.bert_config(args).to_json_file(config_file)
    common = {"bert_config_file": config_file,
              "max_seq_length": seq_length,
              "max_predictions_per_seq": MAX_PREDICTIONS[seq_length],
              "train_batch_size": batch,
              "learning_rate": args.convergence_learning_rate,
              "max_sequences_per_pack": args.max_sequences_per_pack}
    print(f"convergence, sequence {seq_length}: {train_documents} training "
          f"documents ({train_count} records; the first "
          f"{args.convergence_sequences} trained on for "
          f"{args.convergence_epochs} epochs: {steps['unpacked']} steps "
          f"unpacked, {steps['packed']} packed at "
          f"{fill_details['sequences_per_packed_row']} sequences per row), "
          f"{held_out_documents} held-out documents "
          f"({eval_steps * EVAL_BATCH_SIZE} of {held_out_count} records "
          "evaluated)", flush=True)
    results = {"packed": [], "unpacked": []}
    for seed in args.convergence_seeds:
        for name in ("unpacked", "packed"):
            start = time.perf_counter()
            results[name].append(train_and_evaluate(
                common, train_records, held_out_records,
                os.path.join(work_dir, f"convergence-{name}-seed-{seed}"),
                seed, name == "packed", steps[name], eval_steps))
            print(f"  seed {seed}, {name}: " + ", ".join(
                f"{label} {float(results[name][-1][key]):.4f}"
                for key, label, _, _ in CONVERGENCE_METRICS)
                + f" ({time.perf_counter() - start:.0f} s)", flush=True)
    for key, label, unit, lower_is_better in CONVERGENCE_METRICS:
        values = {name: [float(result[key]) for result in results[name]]
                  for name in ("packed", "unpacked")}
        within, difference, spread = within_seed_spread(
            values["packed"], values["unpacked"])
        print(f"  {label}: packed - unpacked {difference:+.4f} (medians), "
              f"seed spread {spread:.4f}: "
              f"{'within' if within else 'OUTSIDE'} it", flush=True)
        record.add(
            f"convergence, sequence {seq_length}, {short_shape}: {label}",
            values, unit=unit, lower_is_better=lower_is_better,
            details={"part": "convergence", "metric": key,
                     "seeds": list(args.convergence_seeds),
                     "seq_length": seq_length, "shape": shape,
                     "dupe_factor": args.dupe_factor,
                     "max_sequences_per_pack": args.max_sequences_per_pack,
                     "training_documents": train_documents,
                     "training_records": args.convergence_sequences,
                     "epochs": args.convergence_epochs,
                     "training_sequences": sequences,
                     "batch_rows": batch, "steps": steps,
                     "learning_rate": args.convergence_learning_rate,
                     "short_seq_prob": args.convergence_short_seq_prob,
                     "unpacked_fill": round(unpacked_fill, 4),
                     "packed_fill": round(packed_fill, 4),
                     "sequences_per_packed_row":
                         fill_details["sequences_per_packed_row"],
                     "held_out_documents": held_out_documents,
                     "held_out_sequences": eval_steps * EVAL_BATCH_SIZE,
                     "difference_of_medians": difference,
                     "seed_spread": spread,
                     "within_seed_spread": within})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_model_shape_arguments(parser, with_vocab_size=True)
    parser.set_defaults(num_layers=2, hidden_size=128,
                        num_attention_heads=2, intermediate_size=512)
    parser.add_argument("--seq_lengths", default="512,128",
                        help="comma-separated; each of 128, 512")
    parser.add_argument("--corpora", default=",".join(CORPORA),
                        help="comma-separated; each of "
                             f"{', '.join(CORPORA)} (speed part)")
    parser.add_argument("--batch_size", type=int, default=8,
                        help="rows per training batch, packed or not")
    parser.add_argument("--max_sequences_per_pack", type=int, default=3)
    parser.add_argument("--dupe_factor", type=int, default=1,
                        help="create_pretraining_data.py's (Google's "
                             "default is 10; 1 keeps the run short)")
    parser.add_argument("--steps", type=int, default=4,
                        help="training steps per timed call")
    parser.add_argument("--rounds", type=int, default=3,
                        help="timed calls of each contender")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated, what to measure: speed (fill "
                             "and training speed at --seq_lengths), "
                             "convergence (the seeds' held-out accuracy, "
                             "packed and unpacked)")
    parser.add_argument("--convergence_seq_length", type=int, default=128,
                        choices=sorted(MAX_PREDICTIONS))
    parser.add_argument("--convergence_seeds", default="1,2,3",
                        help="comma-separated; one packed and one unpacked "
                             "run each")
    parser.add_argument(
        "--convergence_short_seq_prob", type=float, default=0.5,
        help="create_pretraining_data.py's --short_seq_prob for the "
             "convergence check's records (default 0.5: half of them "
             "shorter, so that rows do hold several sequences; with "
             "Google's 0.1 the sample's long articles fill 97%% of the "
             "rows and packing would be barely exercised)")
    parser.add_argument("--convergence_sequences", type=int, default=1024,
                        help="training records each run reads (the first "
                             "ones of the training documents')")
    parser.add_argument("--convergence_epochs", type=int, default=2,
                        help="passes over those records")
    parser.add_argument("--convergence_batch_size", type=int, default=32,
                        help="rows per training batch, packed or not (the "
                             "demo's 32)")
    parser.add_argument("--convergence_learning_rate", type=float,
                        default=DEMO_LEARNING_RATE,
                        help="peak learning rate (the demo's)")
    harness.records.add_arguments(parser)
    args = parser.parse_args()
    parts = args.parts.split(",")
    if not parts or any(part not in PARTS for part in parts):
        parser.error(f"--parts={args.parts}: each must be one of "
                     f"{', '.join(PARTS)}")
    try:
        seq_lengths = [int(value) for value in args.seq_lengths.split(",")]
        args.convergence_seeds = [
            int(value) for value in args.convergence_seeds.split(",")]
    except ValueError:
        parser.error("--seq_lengths and --convergence_seeds take "
                     "comma-separated integers, e.g. 512,128")
    corpora = args.corpora.split(",")
    if any(name not in CORPORA for name in corpora):
        parser.error(f"--corpora={args.corpora}: each must be one of "
                     f"{', '.join(CORPORA)}")
    if any(length not in MAX_PREDICTIONS for length in seq_lengths):
        parser.error(f"--seq_lengths: each must be one of "
                     f"{', '.join(map(str, MAX_PREDICTIONS))}")
    if min(args.rounds, args.steps, args.batch_size,
           args.convergence_sequences, args.convergence_epochs,
           args.convergence_batch_size) <= 0:
        parser.error("--rounds, --steps, --batch_size, "
                     "--convergence_sequences, --convergence_epochs and "
                     "--convergence_batch_size must be positive")
    if not args.convergence_learning_rate > 0:
        parser.error("--convergence_learning_rate must be positive")
    if not 0 <= args.convergence_short_seq_prob <= 1:
        parser.error("--convergence_short_seq_prob must be in [0, 1]")
    record = harness.records.Record("packing", args)
    shape = (f"{args.num_layers} layers, hidden {args.hidden_size}, "
             f"{args.num_attention_heads} heads, intermediate "
             f"{args.intermediate_size}, vocab {args.vocab_size}")
    short_shape = f"{args.num_layers} layers, hidden {args.hidden_size}"
    print(f"shape: {shape}; batch {args.batch_size} rows; "
          f"{os.cpu_count()} CPUs, TF {tf.__version__}", flush=True)
    work_dir = tempfile.mkdtemp(prefix="bert_tf_packing_")
    try:
        speed_runs = [(corpus, seq_length) for corpus in corpora
                      for seq_length in seq_lengths] if "speed" in parts else []
        for corpus, seq_length in speed_runs:
            records_path, count = make_records(
                work_dir, seq_length, args.dupe_factor,
                corpus=CORPORA[corpus](work_dir), name=corpus)
            unpacked_fill, packed_fill, fill_details = fill_rates(
                args, seq_length, records_path)
            print(f"{corpus}, sequence {seq_length}: {count} records; real "
                  f"tokens {unpacked_fill:.1%} of rows unpacked, "
                  f"{packed_fill:.1%} "
                  f"packed ({fill_details['sequences_per_packed_row']} "
                  f"sequences per row)", flush=True)
            contenders = {}
            for name, pack in (("packed", True), ("unpacked", False)):
                output_dir = os.path.join(work_dir,
                                          f"{corpus}-{name}-{seq_length}")
                contenders[name] = training_function(
                    args, pretraining_task(args, seq_length, records_path,
                                           pack), output_dir)
            rounds = harness.seconds_interleaved(
                [train for train, _ in contenders.values()], args.rounds)
            rates = {name: [sequences / seconds for seconds in times]
                     for (name, (_, sequences)), times
                     in zip(contenders.items(), rounds)}
            for name, values in rates.items():
                print(f"  training {name}: "
                      f"{harness.median(values):.1f} sequences/s "
                      f"({contenders[name][1]} sequences per call)",
                      flush=True)
            record.add(f"training, {CORPUS_IN_NAME[corpus]}sequence "
                       f"{seq_length}, {short_shape}",
                       rates, unit="sequences/s", lower_is_better=False,
                       ratio=("packed", "unpacked"),
                       details={"corpus": corpus,
                                "seq_length": seq_length, "shape": shape,
                                "records": count,
                                "dupe_factor": args.dupe_factor,
                                "max_sequences_per_pack":
                                    args.max_sequences_per_pack,
                                "unpacked_fill": round(unpacked_fill, 4),
                                "packed_fill": round(packed_fill, 4),
                                **fill_details,
                                "batch_rows": args.batch_size,
                                "steps_per_call": args.steps,
                                "sequences_per_call": {
                                    name: sequences for name, (_, sequences)
                                    in contenders.items()}})
        if "convergence" in parts:
            measure_convergence(args, record, work_dir, shape, short_shape)
    finally:
        shutil.rmtree(work_dir)  # ours: made by this run
    record.write()


if __name__ == "__main__":
    main()
