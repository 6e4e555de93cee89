"""What `transformers` reads beside `tokenizer.json`: `tokenizer_config.json` and
`special_tokens_map.json`.

`AutoTokenizer.from_pretrained(folder)` needs `tokenizer_config.json` naming the class
(`PreTrainedTokenizerFast`; without it transformers 4.x looks for a model's `config.json` and
fails) and, for `padding=True`, a pad token: the roles come from `special_roles.choose_roles`
(given, or defaulted from the special tokens' names and logged).

Not here: the tokenizer.json itself (`hf_json.py`), building the transformers object
(`engine/handoff.py`).
"""

from __future__ import annotations

import json
from typing import Any

from workbench.engine.encode.special_roles import AUTO, LOG, Role, SpecialRoles, choose_roles

CONFIG = "tokenizer_config.json"
SPECIAL_MAP = "special_tokens_map.json"


def tokenizer_config(
    special_tokens: dict[str, int], roles: SpecialRoles, model_max_length: int | None
) -> dict[str, Any]:
    """The `tokenizer_config.json` document (read by transformers 4.4x and 5)."""
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        # transformers' clean-up would turn " ." into "." on decode: ids and text must round-trip
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {
            str(tid): {
                "content": name,
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
            }
            for name, tid in sorted(special_tokens.items(), key=lambda item: item[1])
        },
        **roles.as_dict(),
    }
    if model_max_length is not None:
        config["model_max_length"] = int(model_max_length)
    return config


def transformers_files(
    special_tokens: dict[str, int],
    bos: Role = AUTO,
    eos: Role = AUTO,
    pad: Role = AUTO,
    unk: Role = None,
    model_max_length: int | None = None,
) -> dict[str, str]:
    """File name -> text of the two files; the roles' choice is logged (INFO, "workbench")."""
    roles = choose_roles(special_tokens, bos, eos, pad, unk)
    LOG.info("%s", roles.note)
    config = tokenizer_config(special_tokens, roles, model_max_length)
    return {
        CONFIG: json.dumps(config, ensure_ascii=False, indent=1) + "\n",
        SPECIAL_MAP: json.dumps(roles.as_dict(), ensure_ascii=False, indent=1) + "\n",
    }
