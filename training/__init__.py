"""tempo training: measured records -> CDMPP models, baselines, metrics and reports.

See training/README.md. Run experiments with `python3 -m training.run random|cross-model|cross-device`.
"""
