"""Network model families: ``ideal``, ``cbr_delay`` and ``ccac`` (thesis §2.3)."""

from __future__ import annotations

from ccmatic.network import common, families
from ccmatic.trace import Trace


def encode_network(tr: Trace) -> None:
    """Add the model family's constraints to ``tr.enc``.  The CCA must have been
    compiled first (the sending rule depends on which outputs it sets)."""
    fam = tr.model.family
    common.monotone(tr)
    common.initial(tr)
    common.service_bounds(tr)
    common.buffer_param(tr)
    common.loss(tr)
    common.loss_detection(tr)
    common.sending(tr)
    if fam == "ccac":
        families.ccac_waste(tr)
    else:
        families.cbr_waste(tr)
        if fam == "ideal":
            families.ideal_service(tr)
