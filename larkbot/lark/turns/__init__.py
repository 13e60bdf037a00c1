"""Which message runs when and what its turn sees: the dispatcher, fair shares, chat commands,
the turn's input (names, quotes, forwards, media) and the turn itself."""
