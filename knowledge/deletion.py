"""Deleting an uploaded file, as `DELETE /v1/files/{id}`, retention and a failed `rag-tool/insert` all do, and a
vector store with the files `rag-tool/insert` made for it.

A file's order is what makes a crash at any step harmless: the file leaves its vector stores first (an ingestion
under way finds it gone and stops), then its bytes go, then its row — so a crash leaves a row to delete again,
never bytes that no row owns. An attach that raced the first detach (it found the row still there) is
detached once the row is gone: attaching locks the file's row, so it committed before the row's delete.
"""

from __future__ import annotations

from knowledge.blobs import BlobStore
from store.knowledge.files import FileStore
from store.knowledge.vector_stores import VectorStores


async def delete_file(stores: VectorStores, files: FileStore, blobs: BlobStore, tenant: str, file_id: str) -> bool:
    """Whether the tenant had the file's row."""
    await stores.detach_everywhere(tenant, file_id)
    await blobs.delete(file_id)
    deleted = await files.delete(tenant, file_id)
    await stores.detach_everywhere(tenant, file_id)
    return deleted


async def delete_vector_store(
    stores: VectorStores, files: FileStore, blobs: BlobStore, tenant: str, vector_store_id: str
) -> bool:
    """The store, its attachments and chunks, and the files `rag-tool/insert` made of documents for it (they are
    its, not the tenant's uploads): those first, so a crash leaves a store whose delete can be run again.
    Whether the tenant had the store."""
    for file_id in await files.made_for(tenant, vector_store_id):
        await delete_file(stores, files, blobs, tenant, file_id)
    return await stores.delete(tenant, vector_store_id)
