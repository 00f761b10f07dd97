"""The corpus, from files to counted pre-tokens (整词): input paths and formats (``sources``),
shards read in blocks (``shards``), counting here, in worker processes or on Dask (``counting``,
``dask_count``), the pre-tokenizer's regex and its compiled twin (``pretokenize``), the packed
count table (``word_table``) and saved counts (``counts_file``).
"""
