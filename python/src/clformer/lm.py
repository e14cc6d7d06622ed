"""Language models (decoder-only, GPT-2 shaped): generating text, scoring a
text, logits, and Hugging Face's layout."""
from __future__ import annotations

import ctypes
import queue
import threading
from ctypes import POINTER, byref, c_int32, c_size_t, c_void_p
from typing import Iterator, List, NamedTuple, Optional, Sequence, overload

import numpy as np

from . import _lib
from ._device import deferred_interrupts, long_call, wait_for
from ._lib import ROW_TOKEN_CALLBACK, Batch, LmScore, SampleOptions, check, lib, take_string
from ._model import Model, PathLike, _path, precision_code


class Score(NamedTuple):
    """A language model's figures on a text (`clformer eval --text`)."""

    loss: float           #: mean cross-entropy per scored token, in nats
    perplexity: float     #: exp(loss)
    bits_per_byte: float  #: summed loss in bits over the text's UTF-8 bytes
    tokens: int           #: tokens scored: every one but the first
    bytes: int


class Token(NamedTuple):
    """One generated token and the text it adds: complete characters only
    (a character split over byte tokens comes with its last byte). After the
    last token, a Token with id None may carry bytes held back that never
    completed a character."""

    id: Optional[int]
    text: str


def _ids_array(ids) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(ids, dtype=np.int32))


def _i32p(array: np.ndarray):
    return array.ctypes.data_as(POINTER(c_int32))


class LanguageModel(Model):
    """A decoder-only model: trained with `task="lm"`, or a Hugging Face
    GPT-2 directory. Load with `clformer.load(path)`."""

    # --- text and ids ---------------------------------------------------------

    def encode(self, text: str) -> List[int]:
        """The ids of a text under the model's tokenizer (characters, bytes,
        SentencePiece or GPT-2's BPE); characters it lacks become <unk>."""
        data = text.encode("utf-8")
        ids, n = POINTER(c_int32)(), c_size_t()
        check(lib.clformer_lm_encode(self.handle, data, len(data), byref(ids), byref(n)))
        try:
            return ids[:n.value]
        finally:
            lib.clformer_free(ids)

    def decode(self, ids: Sequence[int]) -> str:
        array = _ids_array(ids)
        text = c_void_p()
        check(lib.clformer_lm_decode(self.handle, _i32p(array), array.size, byref(text)))
        return take_string(text.value)

    # --- generation -----------------------------------------------------------

    @staticmethod
    def _sampling(max_tokens: int, temperature: float, top_k: int, top_p: float,
                  seed: int) -> SampleOptions:
        o = SampleOptions()
        lib.clformer_sample_options_default(byref(o))
        o.max_tokens, o.temperature, o.top_k, o.top_p, o.seed = (
            max_tokens, temperature, top_k, top_p, seed)
        return o

    @overload
    def generate(self, prompt: str, max_tokens: int = ..., temperature: float = ...,
                 top_k: int = ..., top_p: float = ..., seed: int = ...,
                 samples: int = ...) -> str: ...

    @overload
    def generate(self, prompt: Sequence[str], max_tokens: int = ..., temperature: float = ...,
                 top_k: int = ..., top_p: float = ..., seed: int = ...,
                 samples: int = ...) -> List[str]: ...

    def generate(self, prompt, max_tokens: int = 200, temperature: float = 0.8, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 1, samples: int = 1):
        """Continues a prompt (a str: returns its continuation) or a list of
        prompts (returns a list: `samples` continuations of each prompt in
        turn), as `clformer generate` does with the same options: one batch
        on the device, and a row makes the tokens it makes alone. temperature
        0 (or top_k 1) is greedy; a seed repeats its text. Ctrl-C stops
        after the current token and raises KeyboardInterrupt."""
        single = isinstance(prompt, str)
        prompts = [prompt] if single else list(prompt)
        if samples < 1:
            raise ValueError("samples must be at least 1")
        options = self._sampling(max_tokens, temperature, top_k, top_p, seed)
        ids = [_ids_array(self.encode(p)) for p in prompts]
        rows = len(prompts) * samples
        out = np.zeros((rows, max(max_tokens, 0)), dtype=np.int32)
        counts = (c_size_t * rows)()
        stop = threading.Event()
        on_token = ROW_TOKEN_CALLBACK(lambda row, token, user: not stop.is_set())
        pointers = (POINTER(c_int32) * len(ids))(*[_i32p(a) for a in ids])
        lengths = (c_size_t * len(ids))(*[a.size for a in ids])
        with self.device.use() as ctx:
            session = self._session_handle(ctx)
            long_call(lambda: lib.clformer_session_generate_batch(
                session, pointers, lengths, len(ids), samples, byref(options), on_token, None,
                _i32p(out), counts), stop.set)
        texts = [self._continuation(ids[r // samples], out[r, :counts[r]]) for r in range(rows)]
        return texts[0] if single and samples == 1 else texts

    def _continuation(self, prompt: np.ndarray, made: np.ndarray) -> str:
        """The text that `made` adds to the prompt (the text stream's pieces)."""
        stream = c_void_p()
        check(lib.clformer_lm_text_stream_create(self.handle, _i32p(prompt), prompt.size,
                                                 byref(stream)))
        pieces = []
        try:
            for token in made.tolist() + [None]:
                text, n = c_void_p(), c_size_t()
                if token is None:
                    check(lib.clformer_lm_text_stream_flush(stream, byref(text), byref(n)))
                else:
                    check(lib.clformer_lm_text_stream_push(stream, token, byref(text), byref(n)))
                pieces.append(_take_bytes(text.value, n.value))
        finally:
            lib.clformer_lm_text_stream_free(stream)
        return b"".join(pieces).decode("utf-8", "replace")

    def stream(self, prompt: str, max_tokens: int = 200, temperature: float = 0.8,
               top_k: int = 0, top_p: float = 1.0, seed: int = 1) -> Iterator[Token]:
        """Yields each new token of one prompt's continuation as it is made,
        with its text (`clformer generate` with one prompt prints the same).
        Leaving the loop early (break, or close()) stops the generation after
        the current token; so does Ctrl-C, raising KeyboardInterrupt. The
        device stays busy until the iterator ends or is closed."""
        options = self._sampling(max_tokens, temperature, top_k, top_p, seed)
        prompt_ids = _ids_array(self.encode(prompt))
        tokens: "queue.Queue[tuple]" = queue.Queue()
        stop = threading.Event()
        text_stream = c_void_p()
        check(lib.clformer_lm_text_stream_create(self.handle, _i32p(prompt_ids), prompt_ids.size,
                                                 byref(text_stream)))

        def piece(status: int, text: c_void_p, n: c_size_t) -> bytes:
            if status != 0:
                raise _lib.error(status)
            return _take_bytes(text.value, n.value)

        def on_token(row: int, token: int, user) -> bool:  # in the worker thread
            try:
                text, n = c_void_p(), c_size_t()
                status = lib.clformer_lm_text_stream_push(text_stream, token, byref(text),
                                                          byref(n))
                tokens.put(("token", token, piece(status, text, n)))
            except BaseException as e:  # reported by the consumer
                tokens.put(("error", e, None))
                return False
            return not stop.is_set()

        callback = ROW_TOKEN_CALLBACK(on_token)
        lengths = (c_size_t * 1)(prompt_ids.size)
        pointers = (POINTER(c_int32) * 1)(_i32p(prompt_ids))

        done = threading.Event()

        def work(session: int) -> None:
            try:
                status = lib.clformer_session_generate_batch(
                    session, pointers, lengths, 1, 1, byref(options), callback, None, None, None)
                if status != 0:
                    tokens.put(("error", _lib.error(status), None))
                    return
                text, n = c_void_p(), c_size_t()
                rest = piece(lib.clformer_lm_text_stream_flush(text_stream, byref(text),
                                                               byref(n)), text, n)
                tokens.put(("end", None, rest))
            except BaseException as e:
                tokens.put(("error", e, None))
            finally:
                done.set()

        with self.device.use() as ctx:
            worker = threading.Thread(target=work, args=(self._session_handle(ctx),),
                                      name="clformer-generate", daemon=True)
            try:
                with deferred_interrupts(stop.set):  # the thread starts whole, or not at all
                    worker.start()
                while True:
                    try:
                        kind, value, text = tokens.get(timeout=0.05)
                    except queue.Empty:
                        continue
                    if kind == "error":
                        raise value
                    if kind == "end":
                        if text:
                            yield Token(None, text.decode("utf-8", "replace"))
                        return
                    yield Token(value, text.decode("utf-8", "replace"))
            finally:  # the end, an error, break/close() or Ctrl-C: the worker ends first
                stop.set()
                try:
                    if worker.ident is not None:
                        with deferred_interrupts():
                            wait_for(done)
                finally:
                    lib.clformer_lm_text_stream_free(text_stream)

    # --- scores and logits ------------------------------------------------------

    def evaluate(self, text: str, batch_size: int = 16) -> Score:
        """Loss, perplexity and bits per byte on a text (`clformer eval
        --text`): consecutive windows of the model's context, every token
        but the first scored once, dropout off."""
        ids = _ids_array(self.encode(text))
        size = len(text.encode("utf-8"))
        score = LmScore()
        with self.device.use() as ctx:
            session = self._session_handle(ctx)
            long_call(lambda: lib.clformer_session_lm_score(session, _i32p(ids), ids.size, size,
                                                            batch_size, byref(score)))
        return Score(score.loss, score.perplexity, score.bits_per_byte, score.tokens, score.bytes)

    def logits(self, ids) -> np.ndarray:
        """The logits at each position (dropout off) as float32: ids of shape
        (T,) give (T, vocab), a batch (B, T) gives (B, T, vocab); position t
        scores the token after ids[..., t] (Hugging Face's model(ids).logits)."""
        array = _ids_array(ids)
        if array.ndim not in (1, 2) or array.shape[-1] < 1:
            raise ValueError(f"ids must have shape (T,) or (B, T) with T >= 1, got {array.shape}")
        rows = array.reshape(-1, array.shape[-1])
        B, T = rows.shape
        # the library takes whole sequences: the input plus one label column
        tgt = np.full((B, T + 1), 2, dtype=np.int32)  # CLFORMER_EOS, never read
        tgt[:, :T] = rows
        vocab = int(lib.clformer_model_config(self.handle).contents.tgt_vocab)
        out = np.empty((B, T, vocab), dtype=np.float32)
        batch = Batch(B, 0, T + 1, None, _i32p(tgt))
        with self.device.use() as ctx:
            session = self._session_handle(ctx)
            long_call(lambda: lib.clformer_session_logits(session, byref(batch), out.ctypes.data))
        return out[0] if array.ndim == 1 else out

    def export_hf(self, directory: PathLike, precision: str = "fp32") -> None:
        """Writes the model in Hugging Face's GPT-2 layout (model.safetensors,
        config.json, the tokenizer) for transformers' from_pretrained."""
        code = precision_code(precision)
        with self.device.use():
            long_call(lambda: lib.clformer_model_export_hf_gpt2_as(self.handle, _path(directory),
                                                                   code))


def _take_bytes(pointer: Optional[int], n: int) -> bytes:
    if not pointer:
        return b""
    try:
        return ctypes.string_at(pointer, n)
    finally:
        lib.clformer_free(pointer)
