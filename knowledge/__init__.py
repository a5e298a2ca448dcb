"""Knowledge: text extraction, chunking, embedding providers, blob storage and vector engines."""
