"""The negative checks of NeMo stage 2: is a negative scene free of the target after all?

Module map: :mod:`.negative_probe` (what planning asks a check and gets back),
:mod:`.negative_scan` (the label check: a tiled, denser, lower-threshold detector look for one
label, and the scans it keeps), :mod:`.change_gate` (the part of a frame that
changed, which alone the label check detects), :mod:`.tiles` (tiled detection), :mod:`.instance`
(the instance check: the target object's own pixels searched for in the negative),
:mod:`.template_search` (how a small template is found in a frame, coarse to fine) and
:mod:`.build` (the check the ``nemo`` params ask for, and its scan ahead). Their
public names are re-exported by :mod:`needleforge.nemo`; importing this package imports none
of them.
"""
