"""Unigram on the training screen: a round of EM and pruning at a time, in a room of its own."""
