"""One machine against another: each work's difference put down to a ceiling, a fact, or neither."""
