"""Second opinions: a second assessor's answer on a judged pair, and "ask me instead"."""
