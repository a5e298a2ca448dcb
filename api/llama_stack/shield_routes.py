"""The shields configured on this server, which agents may name as input or output shields."""

from __future__ import annotations

from fastapi import APIRouter

from api.llama_stack.schemas import ListResponse
from api.services import ServicesDep

router = APIRouter(tags=["shields"])


@router.get("/shields", response_model=ListResponse)
async def list_shields(services: ServicesDep) -> ListResponse:
    return ListResponse(
        data=[
            {
                "identifier": shield_id,
                "provider_resource_id": spec.model or shield_id,
                "provider_id": spec.provider,
                "type": "shield",
                "params": {},
            }
            for shield_id, spec in services.settings.shields.items()
        ]
    )
