"""Sequence packing (`run_pretraining.py --pack_sequences`): fill and speed.

Records are made as a user makes them: gensim's Wikipedia sample (the
corpus `demo.py` pretrains on, `bert_tf.corpora.wikipedia`) through
`create_pretraining_data.py`'s library with Google's uncased vocabulary
and Google's flags (`--dupe_factor` aside), at sequence 512 (80 masked
positions) and 128 (20). For each length:

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

    python benchmarks/packing.py                         # both lengths
    python benchmarks/packing.py --seq_lengths=128 --rounds=3

Nothing is asserted about time; the run writes a record
(`benchmarks/records.py`) that `benchmarks/performance_page.py` shows.
"""

import argparse
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


def make_records(work_dir, seq_length, dupe_factor):
    """create_pretraining_data.py's records of the Wikipedia sample."""
    from bert_tf.corpora import wikipedia
    from bert_tf.pretraining import corpus as pretraining_corpus
    from bert_tf.pretraining import instances as pretraining_instances
    corpus = os.path.join(work_dir, "wikipedia.txt")
    if not os.path.exists(corpus):
        wikipedia.write_corpus(wikipedia.find_gensim_wiki_dump(), corpus)
    path = os.path.join(work_dir, f"records-{seq_length}.tfrecord")
    count = pretraining_instances.create_pretraining_data(
        input_files=[corpus], output_files=[path],
        tokenizer=pretraining_corpus.load_tokenizer(str(UNCASED_VOCAB), True),
        max_seq_length=seq_length,
        max_predictions_per_seq=MAX_PREDICTIONS[seq_length],
        dupe_factor=dupe_factor, num_logged_examples=0)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_model_shape_arguments(parser, with_vocab_size=True)
    parser.set_defaults(num_layers=2, hidden_size=128,
                        num_attention_heads=2, intermediate_size=512)
    parser.add_argument("--seq_lengths", default="512,128",
                        help="comma-separated; each of 128, 512")
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
    harness.records.add_arguments(parser)
    args = parser.parse_args()
    seq_lengths = [int(value) for value in args.seq_lengths.split(",")]
    if any(length not in MAX_PREDICTIONS for length in seq_lengths):
        parser.error(f"--seq_lengths: each must be one of "
                     f"{', '.join(map(str, MAX_PREDICTIONS))}")
    if min(args.rounds, args.steps, args.batch_size) <= 0:
        parser.error("--rounds, --steps and --batch_size must be positive")
    record = harness.records.Record("packing", args)
    shape = (f"{args.num_layers} layers, hidden {args.hidden_size}, "
             f"{args.num_attention_heads} heads, intermediate "
             f"{args.intermediate_size}, vocab {args.vocab_size}")
    short_shape = f"{args.num_layers} layers, hidden {args.hidden_size}"
    print(f"shape: {shape}; batch {args.batch_size} rows; "
          f"{os.cpu_count()} CPUs, TF {tf.__version__}", flush=True)
    work_dir = tempfile.mkdtemp(prefix="bert_tf_packing_")
    try:
        for seq_length in seq_lengths:
            records_path, count = make_records(work_dir, seq_length,
                                               args.dupe_factor)
            unpacked_fill, packed_fill, fill_details = fill_rates(
                args, seq_length, records_path)
            print(f"sequence {seq_length}: {count} records; real tokens "
                  f"{unpacked_fill:.1%} of rows unpacked, {packed_fill:.1%} "
                  f"packed ({fill_details['sequences_per_packed_row']} "
                  f"sequences per row)", flush=True)
            contenders = {}
            for name, pack in (("packed", True), ("unpacked", False)):
                output_dir = os.path.join(work_dir, f"{name}-{seq_length}")
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
            record.add(f"training, sequence {seq_length}, {short_shape}",
                       rates, unit="sequences/s", lower_is_better=False,
                       ratio=("packed", "unpacked"),
                       details={"seq_length": seq_length, "shape": shape,
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
    finally:
        shutil.rmtree(work_dir)  # ours: made by this run
    record.write()


if __name__ == "__main__":
    main()
