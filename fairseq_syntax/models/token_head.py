"""A per-token classification head for RoBERTa-style models (token labeling, e.g. NER)."""
import torch.nn as nn
from fairseq import utils


class TokenLabelingHead(nn.Module):
    """dense -> activation -> out_proj at every position (RobertaClassificationHead's layers, per token,
    so fairseq's checkpoint upgrade, which reads ``dense`` and ``out_proj``, handles it)."""

    def __init__(self, input_dim, inner_dim, num_classes, activation_fn, pooler_dropout):
        super().__init__()
        self.dense = nn.Linear(input_dim, inner_dim)
        self.activation_fn = utils.get_activation_fn(activation_fn)
        self.dropout = nn.Dropout(p=pooler_dropout)
        self.out_proj = nn.Linear(inner_dim, num_classes)

    def forward(self, features, **kwargs):
        x = self.dropout(features)
        x = self.activation_fn(self.dense(x))
        return self.out_proj(self.dropout(x))
