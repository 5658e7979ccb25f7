from django.contrib import admin

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
    inlines = [MembershipInline]


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["pk", "project", "media_type", "content_hash", "created_at"]
    readonly_fields = ["content_hash"]


@admin.register(Contract)
class ContractAdmin(admin.ModelAdmin):
    list_display = ["key", "version", "status", "project", "updated_at"]
    list_filter = ["status", "project"]
    search_fields = ["key", "title"]
    raw_id_fields = ["artifact", "previous"]


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["node_id", "type", "review_status", "contract", "proposer"]
    list_filter = ["type", "review_status"]
    search_fields = ["node_id", "label"]
    raw_id_fields = ["contract", "parent"]


admin.site.register(Edge)
admin.site.register(Invariant)
admin.site.register(Query)
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
