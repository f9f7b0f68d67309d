"""Keras 3 BERT layers whose variable paths are Google's checkpoint names.

By concept, in dependency order:

- `layers`: small building blocks (shapes, initializer, activations,
  dropout, LayerNorm, attention mask, checkpoint scope);
- `embeddings`: `BertEmbeddings`;
- `transformer`: the post-LN Transformer block with its attention, and the
  encoder stack;
- `bert_model`: `BertModel`, the backbone (embeddings, encoder, pooler);
- `heads`: the task heads (classifier, masked LM, next sentence, span,
  token classifier);
- `crf`: a linear-chain CRF over tag sequences (tagging's `--use_crf`);
- `bilstm`: a bidirectional LSTM between the encoder and a head
  (`run_squad.py --span_bilstm`, the paper's "LTR & No NSP + BiLSTM").
"""

from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.bert_model import Pooler
from bert_tf.modeling.bilstm import BiLSTM
from bert_tf.modeling.embeddings import BertEmbeddings
from bert_tf.modeling.heads import ClassifierHead
from bert_tf.modeling.heads import MaskedLMHead
from bert_tf.modeling.heads import NextSentenceHead
from bert_tf.modeling.heads import SpanHead
from bert_tf.modeling.heads import TokenClassifierHead
from bert_tf.modeling.layers import LayerNorm
from bert_tf.modeling.layers import SUPPORTED_ACTIVATIONS
from bert_tf.modeling.layers import attention_bias_from_mask
from bert_tf.modeling.layers import checkpoint_scope
from bert_tf.modeling.layers import gelu
from bert_tf.modeling.layers import get_activation
from bert_tf.modeling.layers import weight_initializer
from bert_tf.modeling.transformer import MultiHeadSelfAttention
from bert_tf.modeling.transformer import TransformerBlock
from bert_tf.modeling.transformer import TransformerEncoder

__all__ = [
    "BertEmbeddings",
    "BertModel",
    "BiLSTM",
    "ClassifierHead",
    "LayerNorm",
    "MaskedLMHead",
    "MultiHeadSelfAttention",
    "NextSentenceHead",
    "Pooler",
    "SUPPORTED_ACTIVATIONS",
    "SpanHead",
    "TokenClassifierHead",
    "TransformerBlock",
    "TransformerEncoder",
    "attention_bias_from_mask",
    "checkpoint_scope",
    "gelu",
    "get_activation",
    "weight_initializer",
]
