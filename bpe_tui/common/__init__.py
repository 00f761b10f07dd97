"""What several screens share: token display, tables of columns, progress bars, the child
process behind a screen, durations, the prompt, and the messages a screen sends the app to
open another. Nothing here imports a feature.
"""
