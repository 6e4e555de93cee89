"""The readable form the store keeps beside each token's bytes (`readable(b" the") == "·the"`).

It lives in `workbench.display`, the one home of the glyph table; re-exported here because the
store writes it and the store's search maps typed text the same way.
"""

from workbench.display import readable, readable_query, real_text

__all__ = ["readable", "readable_query", "real_text"]
