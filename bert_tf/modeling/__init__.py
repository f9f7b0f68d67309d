"""Keras 3 BERT layers whose variable paths are Google's checkpoint names."""

from bert_tf.modeling.activations import SUPPORTED_ACTIVATIONS
from bert_tf.modeling.activations import gelu
from bert_tf.modeling.activations import get_activation
from bert_tf.modeling.attention_block import AttentionBlock
from bert_tf.modeling.attention_mask import attention_bias_from_mask
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.checkpoint_scope import checkpoint_scope
from bert_tf.modeling.classifier_head import ClassifierHead
from bert_tf.modeling.embeddings import BertEmbeddings
from bert_tf.modeling.encoder import TransformerEncoder
from bert_tf.modeling.initializers import weight_initializer
from bert_tf.modeling.intermediate import Intermediate
from bert_tf.modeling.layer_norm import LayerNorm
from bert_tf.modeling.masked_lm_head import MaskedLMHead
from bert_tf.modeling.next_sentence_head import NextSentenceHead
from bert_tf.modeling.pooler import Pooler
from bert_tf.modeling.residual_output import ResidualOutput
from bert_tf.modeling.self_attention import MultiHeadSelfAttention
from bert_tf.modeling.span_head import SpanHead
from bert_tf.modeling.transformer_block import TransformerBlock

__all__ = [
    "AttentionBlock",
    "BertEmbeddings",
    "BertModel",
    "ClassifierHead",
    "Intermediate",
    "LayerNorm",
    "MaskedLMHead",
    "MultiHeadSelfAttention",
    "NextSentenceHead",
    "Pooler",
    "ResidualOutput",
    "SUPPORTED_ACTIVATIONS",
    "SpanHead",
    "TransformerBlock",
    "TransformerEncoder",
    "attention_bias_from_mask",
    "checkpoint_scope",
    "gelu",
    "get_activation",
    "weight_initializer",
]
