"""The Django admin. A contract that is audited is read-only here too: its row and its
nodes, edges, invariants and queries can be viewed, not changed or deleted (a change
would bypass the services and leave no audit record)."""

from django.contrib import admin
from django.db.models import F

from .models import (
    Artifact,
    AuditRecord,
    Contract,
    Edge,
    Invariant,
    Membership,
    Node,
    Project,
    ProposalRun,
    Query,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    # Set on the project page (review_thresholds_set), which also re-reads the
    # assessments of the project's semantic runs; a change here would leave them stale.
    readonly_fields = ["review_clean_below", "review_violation_from"]
    inlines = [MembershipInline]


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["pk", "project", "media_type", "content_hash", "created_at"]
    readonly_fields = ["content_hash"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        _revise(obj.contracts.values_list("pk", flat=True))  # their export quotes it


class AuditedReadOnly(admin.ModelAdmin):
    """Change and delete only what belongs to a contract that is not audited."""

    contract_field = "contract_id"  # the contract's pk, as a field of these rows

    def contract_of(self, obj):
        return obj.contract

    def _audited(self, obj) -> bool:
        return obj is not None and self.contract_of(obj).is_read_only

    def has_change_permission(self, request, obj=None):
        return not self._audited(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not self._audited(obj) and super().has_delete_permission(request, obj)

    # A change here bypasses the services, so it counts the contract's revision itself:
    # the audit cached for the old revision must not be shown for the new content.
    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        _revise([getattr(form.instance, self.contract_field)])

    def delete_model(self, request, obj):
        pk = getattr(obj, self.contract_field)
        super().delete_model(request, obj)
        _revise([pk])

    def delete_queryset(self, request, queryset):
        pks = list(queryset.values_list(self.contract_field, flat=True).distinct())
        super().delete_queryset(request, queryset)
        _revise(pks)


def _revise(contract_pks) -> None:
    Contract.objects.filter(pk__in=contract_pks).update(revision=F("revision") + 1)


@admin.register(Contract)
class ContractAdmin(AuditedReadOnly):
    list_display = ["key", "version", "status", "project", "updated_at"]
    list_filter = ["status", "project"]
    search_fields = ["key", "title"]
    raw_id_fields = ["artifact", "previous"]
    contract_field = "pk"

    def contract_of(self, obj):
        return obj


@admin.register(Node)
class NodeAdmin(AuditedReadOnly):
    list_display = ["node_id", "type", "review_status", "contract", "proposer"]
    list_filter = ["type", "review_status"]
    search_fields = ["node_id", "label"]
    raw_id_fields = ["contract", "parent"]


@admin.register(Edge)
class EdgeAdmin(AuditedReadOnly):
    list_display = ["contract", "source", "kind", "target"]
    raw_id_fields = ["contract", "source", "target"]


@admin.register(Invariant)
class InvariantAdmin(AuditedReadOnly):
    list_display = ["inv_id", "label", "contract"]
    raw_id_fields = ["contract"]


@admin.register(Query)
class QueryAdmin(AuditedReadOnly):
    list_display = ["query_id", "contract"]
    raw_id_fields = ["contract"]


admin.site.register(ProposalRun)


@admin.register(AuditRecord)
class AuditRecordAdmin(admin.ModelAdmin):
    """Read-only: the history is append-only."""

    list_display = ["created_at", "contract", "user", "action", "object_type", "object_id"]
    list_filter = ["action", "object_type"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
