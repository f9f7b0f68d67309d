"""The task heads on top of `BertModel`, with Google's variable names:
`ClassifierHead` (run_classifier.py's `output_weights`/`output_bias`),
`MaskedLMHead` and `NextSentenceHead` (`cls/predictions`,
`cls/seq_relationship`), `SpanHead` (run_squad.py's `cls/squad`),
`TokenClassifierHead` (the classifier at every position, for tagging).
"""

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.modeling.layers import LayerNorm
from bert_tf.modeling.layers import checkpoint_scope
from bert_tf.modeling.layers import dropout
from bert_tf.modeling.layers import gather_positions
from bert_tf.modeling.layers import get_activation
from bert_tf.modeling.layers import shape_list
from bert_tf.modeling.layers import tensorflow_or_none
from bert_tf.modeling.layers import weight_initializer


def _matmul_transposed(x, weights):
    """x W^T for x [n, k] and W [m, k] (stored as Google stores it): [n, m].

    On TensorFlow, `tf.matmul(transpose_b=True)` uses W as stored, uncopied
    (a [vocab, hidden] table is the largest tensor of the model).
    """
    tf = tensorflow_or_none()
    if tf is not None:
        return tf.matmul(x, weights, transpose_b=True)
    return ops.matmul(x, ops.transpose(ops.convert_to_tensor(weights)))


# -- output weights -----------------------------------------------------------
# What the classifier, next-sentence and span heads have in common: Google's
# `output_weights` [num_outputs, hidden_size] (stored transposed) and
# `output_bias` [num_outputs], and logits = x W^T + b in float32.

class _OutputWeightsHead(keras.layers.Layer):
    """Base of the heads with Google's `output_weights`/`output_bias`.

    A subclass says where the two variables live (`checkpoint_scope`), how
    many outputs there are and the initializer's stddev, and computes its
    logits with `_logits`.
    """

    def __init__(self, config, num_outputs, name, input_size=None, **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          num_outputs: the rows of `output_weights`, a positive int.
          name: the Keras layer name.
          input_size: the columns of `output_weights`, the size of each
            input vector (default: `config.hidden_size`, the encoder's).
          **kwargs: Keras layer arguments (`dtype`, `trainable`).

        Raises:
          TypeError: `config` is not a BertConfig.
        """
        super().__init__(name=name, **kwargs)
        if not isinstance(config, BertConfig):
            raise TypeError(
                f"config must be a BertConfig, got {type(config).__name__}")
        self.config = config
        self._num_outputs = num_outputs
        self.input_size = (config.hidden_size if input_size is None
                           else int(input_size))

    def _build_output_weights(self, scope, stddev):
        """Creates the two variables as `<scope>/output_weights` and
        `<scope>/output_bias` (`scope` "" for the checkpoint's root)."""
        with checkpoint_scope(scope):
            self.output_weights = keras.Variable(
                initializer=weight_initializer(stddev),
                shape=(self._num_outputs, self.input_size),
                dtype=self.variable_dtype, name="output_weights")
            # float32 under every policy: added to float32 logits.
            self.output_bias = keras.Variable(
                initializer="zeros", shape=(self._num_outputs,),
                dtype="float32", autocast=False, name="output_bias")

    def _logits(self, inputs):
        """[..., hidden_size] -> float32 logits [..., num_outputs]."""
        shape = shape_list(inputs)
        if len(shape) == 2:
            flat = inputs
        else:
            flat = ops.reshape(inputs, [-1, shape[-1]])  # [positions, hidden]
        logits = _matmul_transposed(flat, self.output_weights)
        logits = ops.cast(logits, "float32") + self.output_bias
        if len(shape) == 2:
            return logits
        return ops.reshape(logits, shape[:-1] + [self._num_outputs])

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)


# -- classifier head ----------------------------------------------------------
# The sequence-classification head of Google's `run_classifier.py`.

# run_classifier.py's `create_model` hard-codes both, whatever the config says.
CLASSIFIER_DROPOUT = 0.1
CLASSIFIER_INITIALIZER_STDDEV = 0.02


@keras.saving.register_keras_serializable(package="bert_tf")
class ClassifierHead(_OutputWeightsHead):
    """logits = dropout(pooled_output) W^T + b.

    Variables: `output_weights` [num_labels, hidden_size] and `output_bias`
    [num_labels], at the checkpoint's root with no scope, exactly as
    `run_classifier.py` names them.
    """

    def __init__(self, config, num_labels, name="classifier",
                 input_size=None, **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          num_labels: number of classes, a positive int.
          name: the Keras layer name (the variables have no scope).
          input_size: the size of each input vector (default:
            `config.hidden_size`, the encoder's).
          **kwargs: Keras layer arguments (`dtype`, `trainable`).

        Raises:
          TypeError: `config` is not a BertConfig.
          ValueError: `num_labels` is not a positive int.
        """
        super().__init__(config, num_labels, name=name,
                         input_size=input_size, **kwargs)
        if (isinstance(num_labels, bool) or not isinstance(num_labels, int)
                or num_labels < 1):
            raise ValueError(
                f"num_labels must be a positive integer, got {num_labels!r}")
        self.num_labels = num_labels

    def build(self, pooled_output_shape=None):
        self._build_output_weights("", CLASSIFIER_INITIALIZER_STDDEV)

    def call(self, pooled_output, training=False):
        """Classifies.

        Args:
          pooled_output: [batch_size, hidden_size].
          training: whether to apply dropout (rate 0.1) to `pooled_output`.

        Returns:
          float32 logits [batch_size, num_labels].
        """
        pooled_output = dropout(pooled_output, CLASSIFIER_DROPOUT, training)
        return self._logits(pooled_output)

    def get_config(self):
        return {**super().get_config(), "num_labels": self.num_labels}


# -- masked lm head -----------------------------------------------------------
# The masked-LM head: predicts the original token at masked positions.

class _Untracked:
    """Holds a variable without making it a weight of the holder.

    The word-embedding table belongs to `BertModel`; were the head to track
    it too, `head.weights` would list a variable that is not the head's.
    """

    def __init__(self, value):
        self.value = value


@keras.saving.register_keras_serializable(package="bert_tf")
class MaskedLMHead(keras.layers.Layer):
    """Google's `get_masked_lm_output` (logits; the loss is the task's).

    x = LayerNorm(act(gather(sequence_output, positions) W_t + b_t))
    logits = x E^T + output_bias,   E = the word-embedding table (tied).

    Gathering the masked positions first keeps the vocabulary projection, the
    costliest matmul of pretraining, to the few predicted positions.

    Variables: `cls/predictions/transform/dense/{kernel,bias}`,
    `cls/predictions/transform/LayerNorm/{gamma,beta}`,
    `cls/predictions/output_bias` [vocab_size].
    """

    def __init__(self, config, embedding_table, name="predictions",
                 **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          embedding_table: the encoder's word-embedding variable
            [vocab_size, hidden_size] (`BertModel.embedding_table`).
          name: the scope under "cls/"; Google's is "predictions".
          **kwargs: Keras layer arguments (`dtype`, `trainable`).

        Raises:
          TypeError: `config` is not a BertConfig.
          ValueError: the table's shape is not [vocab_size, hidden_size].
        """
        super().__init__(name=name, **kwargs)
        if not isinstance(config, BertConfig):
            raise TypeError(
                f"config must be a BertConfig, got {type(config).__name__}")
        expected = (config.vocab_size, config.hidden_size)
        table_shape = tuple(getattr(embedding_table, "shape", ()) or ())
        if table_shape != expected:
            raise ValueError(
                f"embedding_table must be [vocab_size, hidden_size] = "
                f"{list(expected)} for this config, got "
                f"{list(table_shape) or repr(embedding_table)}")
        self.config = config
        self._embedding_table = _Untracked(embedding_table)
        self.transform_dense = keras.layers.Dense(
            config.hidden_size, name="dense", dtype=self.dtype_policy,
            activation=get_activation(config.hidden_act),
            kernel_initializer=weight_initializer(config.initializer_range))
        self.transform_layer_norm = LayerNorm(
            name="LayerNorm", dtype=self.dtype_policy)

    @property
    def embedding_table(self):
        """The tied word-embedding variable (owned by the encoder)."""
        return self._embedding_table.value

    def build(self, sequence_output_shape=None):
        scope = f"cls/{self.name}"
        with checkpoint_scope(f"{scope}/transform"):
            self.transform_dense.build((None, None, self.config.hidden_size))
            self.transform_layer_norm.build(
                (None, None, self.config.hidden_size))
        with checkpoint_scope(scope):
            # Added to float32 logits, so kept float32 under every policy.
            self.output_bias = keras.Variable(
                initializer="zeros", shape=(self.config.vocab_size,),
                dtype="float32", autocast=False,
                name="output_bias")

    def call(self, sequence_output, masked_lm_positions):
        """Scores every vocabulary entry at the masked positions.

        Args:
          sequence_output: [batch_size, seq_length, hidden_size].
          masked_lm_positions: int tensor [batch_size, num_predictions],
            indices into each example's sequence (padding entries may be 0).

        Returns:
          float32 logits [batch_size, num_predictions, vocab_size].
        """
        if len(sequence_output.shape) != 3:
            raise ValueError(
                f"sequence_output must be [batch_size, seq_length, "
                f"hidden_size], got shape {tuple(sequence_output.shape)}")
        if len(masked_lm_positions.shape) != 2:
            raise ValueError(
                f"masked_lm_positions must be [batch_size, num_predictions], "
                f"got shape {tuple(masked_lm_positions.shape)}")
        hidden_size = self.config.hidden_size
        batch_size, num_predictions = shape_list(masked_lm_positions)

        # Per example: [batch, seq, hidden] -> [batch, predictions, hidden].
        gathered = gather_positions(sequence_output, masked_lm_positions)
        transformed = self.transform_layer_norm(
            self.transform_dense(gathered))
        flat = ops.reshape(transformed, [-1, hidden_size])  # [b * p, hidden]
        table = ops.cast(self.embedding_table, self.compute_dtype)
        logits = _matmul_transposed(flat, table)  # [b * p, vocab]
        logits = ops.cast(logits, "float32") + self.output_bias
        return ops.reshape(
            logits, [batch_size, num_predictions, self.config.vocab_size])

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        raise ValueError(
            "MaskedLMHead shares the encoder's word embeddings and cannot be "
            "rebuilt from its config alone; create it as "
            "MaskedLMHead(bert_config, bert_model.embedding_table)")


# -- next sentence head -------------------------------------------------------
# The next-sentence-prediction head: is segment B the real continuation?

@keras.saving.register_keras_serializable(package="bert_tf")
class NextSentenceHead(_OutputWeightsHead):
    """logits = pooled_output W^T + b (Google's `get_next_sentence_output`).

    Class 0 means "B follows A", class 1 "B is random".

    Variables: `cls/seq_relationship/output_weights` [2, hidden_size] (stored
    transposed, as Google's) and `cls/seq_relationship/output_bias` [2].
    """

    def __init__(self, config, name="seq_relationship", **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          name: the scope under "cls/"; Google's is "seq_relationship".
          **kwargs: Keras layer arguments (`dtype`, `trainable`).
        """
        super().__init__(config, 2, name=name, **kwargs)

    def build(self, pooled_output_shape=None):
        self._build_output_weights(f"cls/{self.name}",
                                   self.config.initializer_range)

    def call(self, pooled_output):
        """[batch_size, hidden_size] -> float32 logits [batch_size, 2]."""
        return self._logits(pooled_output)


# -- span head ----------------------------------------------------------------
# The answer-span head of Google's `run_squad.py`.

# run_squad.py's `create_model` hard-codes it, whatever the config says.
SPAN_INITIALIZER_STDDEV = 0.02


@keras.saving.register_keras_serializable(package="bert_tf")
class SpanHead(_OutputWeightsHead):
    """Per token: [start, end] logits = sequence_output W^T + b.

    Variables: `cls/squad/output_weights` [2, input_size] and
    `cls/squad/output_bias` [2]; input_size is the encoder's hidden_size
    unless the head reads something else (e.g. a `BiLSTM`'s states).
    """

    def __init__(self, config, name="squad", input_size=None, **kwargs):
        """Args:
          config: the encoder's `BertConfig`.
          name: the scope under "cls/"; Google's is "squad".
          input_size: the size of each position's input vector (default:
            `config.hidden_size`, the encoder's output).
          **kwargs: Keras layer arguments (`dtype`, `trainable`).
        """
        super().__init__(config, 2, name=name, input_size=input_size,
                         **kwargs)

    def build(self, sequence_output_shape=None):
        self._build_output_weights(f"cls/{self.name}",
                                   SPAN_INITIALIZER_STDDEV)

    def call(self, sequence_output):
        """Scores every token as the answer's start and end.

        Args:
          sequence_output: [batch_size, seq_length, input_size].

        Returns:
          (start_logits, end_logits), float32 [batch_size, seq_length] each.
        """
        if len(sequence_output.shape) != 3:
            raise ValueError(
                f"sequence_output must be [batch_size, seq_length, "
                f"hidden_size], got shape {tuple(sequence_output.shape)}")
        logits = self._logits(sequence_output)  # [batch, seq, 2]
        return logits[:, :, 0], logits[:, :, 1]

    def get_config(self):
        return {**super().get_config(), "input_size": self.input_size}


# -- token classifier head ----------------------------------------------------
# A per-token classification head (NER, POS).

@keras.saving.register_keras_serializable(package="bert_tf")
class TokenClassifierHead(ClassifierHead):
    """Per position: logits = dropout(sequence_output) W^T + b.

    The classifier of `run_classifier.py` applied at every position:
    variables `output_weights` [num_labels, hidden_size] and `output_bias`
    [num_labels] at the checkpoint's root, the names Google's classifier
    (and the common BERT-NER ports of it) use, with its dropout (0.1) and
    initializer (stddev 0.02). `input_size` replaces hidden_size when the
    head reads something else (e.g. a `BiLSTM`'s states).
    """

    def __init__(self, config, num_labels, name="token_classifier",
                 input_size=None, **kwargs):
        """Args: as `ClassifierHead`'s (`num_labels`: number of tags)."""
        super().__init__(config, num_labels, name=name,
                         input_size=input_size, **kwargs)

    def call(self, sequence_output, training=False):
        """Scores every tag at every position.

        Args:
          sequence_output: [batch_size, seq_length, hidden_size].
          training: whether to apply dropout (rate 0.1).

        Returns:
          float32 logits [batch_size, seq_length, num_labels].
        """
        sequence_output = dropout(sequence_output, CLASSIFIER_DROPOUT,
                                  training, sequence_axes=(1,))
        return self._logits(sequence_output)

    def get_config(self):
        return {**super().get_config(), "input_size": self.input_size}
