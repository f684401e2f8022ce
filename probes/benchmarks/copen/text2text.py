"""T5 on COPEN as text-to-text (Appendix A.2, A.3, Table 9): the input is the instance's Table 9
form, the target the gold option's letter (CSJ, CiC) or ``true``/``false`` (CPJ), and the model's
own vocabulary head produces it.

- Training loss: the cross-entropy of the gold target's tokens (teacher forcing, the target
  followed by ``</s>``), the loss of a ``Seq2SeqTrainer`` as in the authors' code;
- prediction: every option's target is scored, log P(target | input) summed over its tokens
  (:meth:`TextToText.forward`), and the highest wins; the authors generate (4 beams, 2 tokens)
  and compare the string, which can also produce no valid option;
- linear probing (:func:`head_only`): only the vocabulary head is trained, as a copy untied from
  the input embeddings (the authors load T5 with ``tie_word_embeddings`` off and freeze all but
  ``lm_head``); fine-tuning trains the whole model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from probes.benchmarks.copen import task_name
from probes.benchmarks.copen.decoder_eos import encode
from probes.benchmarks.copen.forms import Example, text_to_text_target


class TextToText(torch.nn.Module):
    """An encoder-decoder LM over one COPEN task's Table 9 forms."""

    def __init__(self, model: Any, tokenizer: Any, task: str, max_length: int | None = None
                 ) -> None:
        super().__init__()
        self.model, self.tokenizer = model, tokenizer
        self.task, self.max_length = task_name(task), max_length

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def targets(self, example: Example) -> list[str]:
        """The target text of each option (Table 9's label)."""
        return [text_to_text_target(self.task, j) for j in range(len(example.options))]

    def _labels(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Target token ids (``</s>`` included) padded with -100, and their mask."""
        ids = self.tokenizer(list(texts))["input_ids"]
        width = max(len(x) for x in ids)
        labels = torch.full((len(ids), width), -100, dtype=torch.long)
        for r, x in enumerate(ids):
            labels[r, :len(x)] = torch.tensor(x)
        labels = labels.to(self.device)
        return labels, labels.ne(-100)

    def _encode(self, examples: Sequence[Example]) -> tuple[torch.Tensor, torch.Tensor]:
        return encode(self.tokenizer, [e.texts[0] for e in examples], self.device,
                      self.max_length)

    def loss(self, examples: Sequence[Example]) -> torch.Tensor:
        """Mean token cross-entropy of the gold targets (labelled examples only)."""
        ids, att = self._encode(examples)
        labels, _ = self._labels([self.targets(e)[int(e.gold)] for e in examples  # type: ignore[arg-type]
                                  ])
        return self.model(input_ids=ids, attention_mask=att, labels=labels).loss

    def forward(self, examples: Sequence[Example]) -> list[torch.Tensor]:
        """Per example, log P(target | input) of each option's target, summed over tokens."""
        from transformers.modeling_outputs import BaseModelOutput

        ids, att = self._encode(examples)
        states = self.model.get_encoder()(input_ids=ids, attention_mask=att).last_hidden_state
        rows = [i for i, e in enumerate(examples) for _ in e.options]
        labels, mask = self._labels([t for e in examples for t in self.targets(e)])
        index = torch.tensor(rows, device=self.device)
        logits = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=states[index]),
                            attention_mask=att[index], labels=labels).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        token = logp.gather(2, labels.clamp(min=0)[:, :, None]).squeeze(2) * mask
        totals = token.sum(dim=1)
        out, pos = [], 0
        for e in examples:
            out.append(totals[pos:pos + len(e.options)])
            pos += len(e.options)
        return out


def predict(t2t: TextToText, examples: Sequence[Example], batch: int) -> list[torch.Tensor]:
    """Option scores of ``examples`` in eval mode, ``batch`` examples per forward."""
    t2t.eval()
    out: list[torch.Tensor] = []
    with torch.no_grad():
        for start in range(0, len(examples), batch):
            out += [r.detach() for r in t2t(examples[start:start + batch])]
    return out


def head_only(model: Any) -> torch.Tensor:
    """Freeze every parameter but the vocabulary head, which becomes its own copy (untied from
    the input embeddings, the same values, so the model computes the same); returns the head's
    original weights (for :func:`reset_head`)."""
    original = model.lm_head.weight.detach().clone()
    for p in model.parameters():
        p.requires_grad_(False)
    model.lm_head.weight = torch.nn.Parameter(original.clone())
    return original


def reset_head(model: Any, original: torch.Tensor) -> None:
    """Put the head's original weights back."""
    with torch.no_grad():
        model.lm_head.weight.copy_(original)
