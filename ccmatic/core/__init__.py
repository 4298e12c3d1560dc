"""The vocabulary every layer shares, with no solver and no parser: errors, units,
the registry of trace quantities, model and scenario configuration, run options and
results.  Imports nothing else of ccmatic."""
