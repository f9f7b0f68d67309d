"""`tf.data` pipeline over Google's pretraining TFRecords (static masking).

Reads the files `create_pretraining_data.py` writes and yields batches of
dicts with Google's feature names, ready for the pretraining heads:

| feature               | dtype   | shape                               |
|-----------------------|---------|-------------------------------------|
| input_ids             | int32   | [batch, max_seq_length]             |
| input_mask            | int32   | [batch, max_seq_length]             |
| segment_ids           | int32   | [batch, max_seq_length]             |
| masked_lm_positions   | int32   | [batch, max_predictions_per_seq]    |
| masked_lm_ids         | int32   | [batch, max_predictions_per_seq]    |
| masked_lm_weights     | float32 | [batch, max_predictions_per_seq]    |
| next_sentence_labels  | int32   | [batch]                             |

The records store int64 (TFRecord has no int32) and `next_sentence_labels`
as a length-1 list; both are converted here, once, on the input side.
"""

import tensorflow as tf

from bert_tf import file_io
from bert_tf.data import tfrecord_files
from bert_tf.pretraining import records

# Parallel reads per input pipeline; more rarely helps on local disks and
# costs memory (one read buffer per open file).
_DEFAULT_CYCLE_LENGTH = 8


def _feature_values(feature):
    """(kind, values) of a `tf.train.Feature`."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None, []
    return kind, getattr(feature, kind).value


def check_pretraining_records(path, max_seq_length, max_predictions_per_seq):
    """Checks that a file's first record has the expected pretraining schema.

    Catches, before training starts, the usual mistakes: data written with
    another `--max_seq_length` or `--max_predictions_per_seq`, a file that
    is not a TFRecord file of `tf.train.Example`s, a missing feature.

    Args:
      path: a TFRecord file.
      max_seq_length: the length `input_ids`, `input_mask` and
        `segment_ids` must have.
      max_predictions_per_seq: the length of the `masked_lm_*` features.

    Returns:
      True when the first record matches; False when the file holds no
      record at all (a valid, empty shard).

    Raises:
      ValueError: naming the file and, for a wrong length, the feature,
        the length found and the length expected.
    """
    try:
        first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
        raise ValueError(
            tfrecord_files.describe_data_loss([path])
            or f"{path}: not a readable TFRecord file ({error.message})"
        ) from None
    except tf.errors.NotFoundError:
        raise ValueError(f"{path}: file not found") from None
    if first is None:
        return False
    try:
        example = tf.train.Example.FromString(first.numpy())
    except Exception as error:  # protobuf's DecodeError, among others
        raise ValueError(
            f"{path}: the first record is not a tf.train.Example ({error})"
        ) from None
    spec = records.pretraining_feature_spec(
        max_seq_length, max_predictions_per_seq)
    # Which flag of create_pretraining_data.py sets each feature's length.
    length_flags = {
        records.INPUT_IDS: "max_seq_length",
        records.INPUT_MASK: "max_seq_length",
        records.SEGMENT_IDS: "max_seq_length",
        records.MASKED_LM_POSITIONS: "max_predictions_per_seq",
        records.MASKED_LM_IDS: "max_predictions_per_seq",
        records.MASKED_LM_WEIGHTS: "max_predictions_per_seq",
    }
    found = example.features.feature
    for name, feature_spec in spec.items():
        if name not in found:
            raise ValueError(
                f"{path}: the first record has no feature '{name}' (it has: "
                f"{', '.join(sorted(found)) or 'none'}); is this pretraining "
                "data written by create_pretraining_data.py?")
        kind, values = _feature_values(found[name])
        expected_kind = (
            "float_list" if feature_spec.dtype == tf.float32 else "int64_list")
        if kind != expected_kind:
            raise ValueError(
                f"{path}: feature '{name}' is a {kind or 'empty feature'}, "
                f"expected a {expected_kind}")
        expected_length = feature_spec.shape[0]
        if len(values) != expected_length:
            flag = length_flags.get(name)
            hint = ""
            if flag:
                hint = (f" ({flag}={expected_length}; were these records "
                        f"written with another {flag}?)")
            raise ValueError(
                f"{path}: feature '{name}' has {len(values)} values, expected "
                f"{expected_length}{hint}")
    return True


def _check_some_file(files, max_seq_length, max_predictions_per_seq):
    """Checks the first file that holds a record; errors if none does."""
    for path in files:
        if check_pretraining_records(
                path, max_seq_length, max_predictions_per_seq):
            return
    raise ValueError(
        f"none of the {len(files)} input files holds a record (first: "
        f"{files[0]})")


def to_model_features(parsed):
    """Casts parsed pretraining features to what the model consumes.

    int64 -> int32 (TPUs and embeddings want int32), `masked_lm_weights`
    stays float32, `next_sentence_labels` [batch, 1] -> [batch].

    Args:
      parsed: the dict `tf.io.parse_example` returns for a batch.

    Returns:
      A new dict with the same keys.
    """
    features = {}
    for name, value in parsed.items():
        if value.dtype == tf.int64:
            value = tf.cast(value, tf.int32)
        features[name] = value
    features[records.NEXT_SENTENCE_LABELS] = tf.reshape(
        features[records.NEXT_SENTENCE_LABELS], [-1])
    return features


def pretraining_dataset(input_patterns, batch_size, max_seq_length,
                        max_predictions_per_seq, is_training,
                        input_context=None, seed=None, *,
                        shuffle_buffer_size=None, drop_remainder=True):
    """Batches of Google's pretraining records, for training or evaluation.

    Training: the file list is shuffled and repeated forever, files are read
    in parallel (interleaved), records shuffled, batched. Evaluation: the
    files are read once, in order, without shuffling.

    Under `tf.distribute` pass the `tf.distribute.InputContext`: the files
    are split between input pipelines when there are at least as many
    files as pipelines, else every pipeline reads every file (in the same
    order) and keeps every `num_input_pipelines`-th record, so pipelines
    never see the same record twice within a pass.

    Args:
      input_patterns: comma-separated string or list of globs.
      batch_size: examples per batch (per replica under a strategy:
        `input_context.get_per_replica_batch_size(global_batch_size)`).
      max_seq_length: the length the records were written with.
      max_predictions_per_seq: likewise for the masked-LM features.
      is_training: training (shuffle, repeat) or evaluation (one pass).
      input_context: optional `tf.distribute.InputContext`.
      seed: makes training order reproducible (shuffles seeded, parallel
        reads deterministic); None: fastest, non-deterministic order.
      shuffle_buffer_size: records held by the record shuffle; default
        100 * batch_size (Google shuffles only 100 records after the files).
      drop_remainder: drop a last, smaller batch, so every batch has a
        static shape (needed on TPU and by XLA-compiled steps). True by
        default for evaluation too, as Google's input_fn does; evaluation
        then skips up to batch_size - 1 records per input pipeline. Pass
        False to evaluate every record.

    Returns:
      A `tf.data.Dataset` of feature dicts (see the module docstring).

    Raises:
      ValueError: a pattern matches nothing, or the first record of the
        files has the wrong schema (see `check_pretraining_records`).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    files = file_io.expand_input_patterns(input_patterns, sort=True)
    tfrecord_files.register_input_files(files)
    _check_some_file(files, max_seq_length, max_predictions_per_seq)
    spec = records.pretraining_feature_spec(
        max_seq_length, max_predictions_per_seq)

    num_pipelines, pipeline_id = 1, 0
    if input_context is not None:
        num_pipelines = input_context.num_input_pipelines
        pipeline_id = input_context.input_pipeline_id
    shard_by_file = num_pipelines > 1 and len(files) >= num_pipelines
    shard_by_record = num_pipelines > 1 and not shard_by_file

    file_names = tf.data.Dataset.from_tensor_slices(files)
    if shard_by_file:
        file_names = file_names.shard(num_pipelines, pipeline_id)
        num_files = len(files[pipeline_id::num_pipelines])
    else:
        num_files = len(files)

    # Record-level sharding keeps every k-th record of one stream, which is
    # only a partition when all pipelines read the same stream: the file
    # order then comes from a seed shared by all pipelines, and reads are
    # deterministic.
    deterministic = seed is not None or shard_by_record or not is_training
    if is_training:
        file_seed = seed if seed is not None else (0 if shard_by_record
                                                   else None)
        file_names = file_names.shuffle(num_files, seed=file_seed)
        file_names = file_names.repeat()

    @tf.autograph.experimental.do_not_convert
    def read_file(path):
        # Each record keeps its file name, so a parse error names the file.
        named = tf.data.TFRecordDataset(path)
        return tf.data.Dataset.zip(
            (tf.data.Dataset.from_tensors(path).repeat(), named))

    cycle_length = min(_DEFAULT_CYCLE_LENGTH, num_files) if is_training else 1
    dataset = file_names.interleave(
        read_file, cycle_length=cycle_length,
        num_parallel_calls=(tf.data.AUTOTUNE if cycle_length > 1 else None),
        deterministic=(deterministic if cycle_length > 1 else None))
    if shard_by_record:
        dataset = dataset.shard(num_pipelines, pipeline_id)
    if is_training:
        buffer_size = shuffle_buffer_size or 100 * batch_size
        record_seed = None if seed is None else seed + pipeline_id
        dataset = dataset.shuffle(buffer_size, seed=record_seed)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)

    @tf.autograph.experimental.do_not_convert
    def parse(names, serialized):
        parsed = tf.io.parse_example(serialized, spec, example_names=names)
        return to_model_features(parsed)

    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE,
                          deterministic=deterministic)
    return dataset.prefetch(tf.data.AUTOTUNE)
