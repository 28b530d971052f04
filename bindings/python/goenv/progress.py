"""Progress bars: tqdm's, off when the caller asks for none. A wanted bar is made with tqdm's
own defaults, so its TQDM_* environment settings apply (TQDM_DISABLE=1 turns every goenv bar
off; an explicit disable=False would override it)."""

from __future__ import annotations


def progress_bar(wanted: bool, iterable=None, **options):
    """tqdm.auto.tqdm(iterable, **options), disabled unless `wanted`."""
    from tqdm.auto import tqdm

    return tqdm(iterable, **options) if wanted else tqdm(iterable, disable=True, **options)
