"""kg: sources -> RDF store. Loaders parse sources, the store holds one named graph per source.

The package knows RDF and nothing about prompts or models.
"""
