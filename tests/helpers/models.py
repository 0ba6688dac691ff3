"""The packaged default model, as tests about "the default" name it (one place, so a switch of
default is one line of recall/config/default_config.toml; tests of a named model name it)."""

from recall.config.load import packaged_settings
from recall.embedding.models import model_id_of

DEFAULT_MODEL = packaged_settings().model
DEFAULT_ID = model_id_of(DEFAULT_MODEL)
E5_ID = "intfloat/multilingual-e5-small"
