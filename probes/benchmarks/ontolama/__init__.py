"""OntoLAMA datasets (He et al., Findings of ACL 2023): build, statistics and export
(``python -m probes.benchmarks.ontolama``).

The probe files are ``queries/ontolama/<ontology>-atomic.rq`` (headers over the shared query
``atomic.sparql``) and ``<ontology>-complex.rq`` (header ``builder_params.ontolama``). The
modules do what their SPARQL cannot:

- :mod:`probes.benchmarks.ontolama.splits`: the class balance (as many negatives as positives, half
soft
  and half hard, in *each* split) and the per-class splits by exact counts (seeded);
- :mod:`kg.owl_expressions` (re-exported here): class expressions, names and hierarchies
  from the store;
- :mod:`probes.benchmarks.ontolama.complex`: the Complex SI samples (positives from the inferred
graph,
  corrupted negatives checked for assumed disjointness with one HermiT run);
- :mod:`probes.benchmarks.ontolama.verbalise`: the recursive verbaliser of class expressions (the
  paper's Table 1 rules);
- :mod:`probes.benchmarks.ontolama.dataset`: ``build`` (instances table and Parquet), ``stats``
(sizes
  beside the paper's Table 2) and ``export`` (OntoLAMA's own JSON-lines files).

>>> sorted(PAPER)
['doid', 'foodon', 'go', 'schemaorg']
>>> PAPER["schemaorg"].atomic
(808, 404, 2830)
"""

from kg.owl_expressions import (
    Unsupported,
    parse_expression,
    property_name,
    read_blank_triples,
    read_class_names,
    read_hierarchy,
    read_individual_types,
    read_property_names,
)
from probes.benchmarks.ontolama.common import (
    CONTROLS,
    DEFAULT_SEED,
    PAPER,
    SPLITS,
    PaperRow,
    control,
    controlled,
    ontolama_probes,
    seeded_hash,
    split_proportions,
    with_controlled,
)
from probes.benchmarks.ontolama.complex import (
    FRESH,
    ComplexReport,
    Sample,
    anchor_definitions,
    classify_with_fresh,
    complex_instances,
    complex_samples,
    negative_candidates,
    positive_samples,
    sample_instances,
)
from probes.benchmarks.ontolama.dataset import (
    BuildReport,
    atomic_instances,
    build,
    export_files,
    format_build,
    instances,
    stats,
)
from probes.benchmarks.ontolama.splits import (
    balance,
    balance_complex,
    complex_concept,
    complex_on_premise,
    group_splits,
    split_by_group,
    split_counts,
    split_per_class,
)

__all__ = [
    "CONTROLS",
    "DEFAULT_SEED",
    "FRESH",
    "PAPER",
    "SPLITS",
    "BuildReport",
    "ComplexReport",
    "PaperRow",
    "Sample",
    "Unsupported",
    "anchor_definitions",
    "atomic_instances",
    "balance",
    "balance_complex",
    "build",
    "classify_with_fresh",
    "complex_concept",
    "complex_instances",
    "complex_on_premise",
    "complex_samples",
    "control",
    "controlled",
    "export_files",
    "format_build",
    "group_splits",
    "instances",
    "negative_candidates",
    "ontolama_probes",
    "parse_expression",
    "positive_samples",
    "property_name",
    "read_blank_triples",
    "read_class_names",
    "read_hierarchy",
    "read_individual_types",
    "read_property_names",
    "sample_instances",
    "seeded_hash",
    "split_by_group",
    "split_counts",
    "split_per_class",
    "split_proportions",
    "stats",
    "with_controlled",
]
