"""What the synthetic inputs (harness_synthetic_inputs.py) and the real ones (harness_real_inputs.py) both read
from a model's config: a field, the text sub-config, the position table's size, a media's placeholder token, and
IncompleteConfig for a field the inputs need and the config lacks (the harness fails the model at config with
config_error naming it)."""

from __future__ import annotations


class IncompleteConfig(ValueError):
    """The config lacks a field the inputs need; str() names it (e.g. vision_config.image_size)."""

    def __init__(self, field: str, why: str = "is missing"):
        super().__init__(f"{field} {why}")
        self.field = field


def get(config, key, default=None):
    if isinstance(config, dict):
        return config.get(key, default)
    return getattr(config, key, default)


def as_int(val) -> int | None:
    return val if isinstance(val, int) and not isinstance(val, bool) else None


def text_config(config):
    if not isinstance(config, dict) and hasattr(config, "get_text_config"):
        try:
            return config.get_text_config(decoder=True)
        except Exception:  # noqa: BLE001
            return config
    return config


def max_positions(config) -> int | None:
    for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx", "max_sequence_length"):
        val = get(config, key)
        if isinstance(val, int) and val > 0:
            return val
    return None


def placeholder(config, media: str) -> int | None:
    keys = {"image": ("image_token_id", "image_token_index"), "video": ("video_token_id", "video_token_index"),
            "audio": ("audio_token_id", "audio_token_index")}[media]
    for key in keys:
        val = as_int(get(config, key))
        if val is not None:
            return val
    return None
