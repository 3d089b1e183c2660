"""Compressed tensor swapping: codecs, activation traces, a cost model and a step simulator.

Would compressing the activations a training step swaps to host memory pay
on a given GPU and link, and for which tensors? This subpackage measures
real codecs on real or realistic tensors, prices them with a calibratable
cost model, and simulates a step under vDNN, always-compress, CSWAP-style
and oracle policies. See ``docs/SWAP.md``.

The names here are the verbs and result types; the building blocks stay in
their modules:

==========================  ================================================
:mod:`.codecs`              codec registry, codec classes, ``measure``
:mod:`.ratios`              compression ratio against sparsity
:mod:`.activations`         synthetic activations, bit-level sparsity
:mod:`.cnn`                 a small numpy CNN on bundled photos
:mod:`.capture`             PyTorch saved-tensor capture
:mod:`.train_capture`       saved activations of real training steps
:mod:`.sparsity_table`      per-layer sparsity against the training step
:mod:`.compressed`          codecs applied to saved activations in training
:mod:`.activation_policy`   per-tensor decisions for those hooks
:mod:`.codec_training`      a codec's run next to the uncompressed run
:mod:`.codec_sweep`         accuracy against codec (ZFP rate), over seeds
:mod:`.nets`                small VGG- and ResNet-style networks
:mod:`.catalog`             analytic, measured and user traces by name
:mod:`.traces`              ``Trace`` and ``TensorRecord``, JSON
:mod:`.sparsity`            sparsity profiles over depth
:mod:`.architectures`       VGG-16 and ResNet-50 traces
:mod:`.costs`               codec kernel costs
:mod:`.profiles`            device profiles
:mod:`.calibration`         fitting kernel costs to measured times
:mod:`.policies`            policy specs
:mod:`.predictor`           cswap's online kernel-time predictor
:mod:`.predictor_eval`      predictors graded on measured codec times
:mod:`.results`             ``SimResult``, ``Decision``, timelines
:mod:`.simulate`            the step simulator
:mod:`.report`              several policies as a table or JSON
==========================  ================================================

References
----------
.. [1] P. Chen, S. He, X. Zhang, S. Chen, P. Hong, Y. Yin, X.-H. Sun and
   G. Chen, "CSWAP: A self-tuning compression framework for accelerating
   tensor swapping in GPUs," IEEE CLUSTER 2021, pp. 271-282.
.. [2] P. Chen et al., "Accelerating tensor swapping in GPUs with self-tuning
   compression," IEEE Transactions on Parallel and Distributed Systems
   33(12), 2022.

Examples
--------
>>> from pcr_explore import swap
>>> trace = swap.builtin_trace("vgg16", batch=8, sparsity=0.65)
>>> results = swap.simulate_many(trace, profile="v100-pcie3", policies=["vdnn", "cswap", "oracle"])
>>> results["cswap"].stall_seconds < results["vdnn"].stall_seconds
True
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
