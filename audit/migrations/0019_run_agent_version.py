# Runs carry the agent version that produced their trace, and a compact per-obligation
# outcome (matching.outcomes) that compliance analytics read instead of the overlays.
#
# 0017 and 0018 both follow 0016; this migration depends on both, so the graph has one
# leaf again.

from django.db import migrations, models

from matching.outcomes import obligation_outcomes


def fill_obligations(apps, schema_editor):
    """Derive the outcomes of the runs read before this migration from their overlays."""
    Run = apps.get_model("audit", "Run")
    done = Run.objects.filter(overlay__isnull=False, obligations__isnull=True)
    batch = []
    for run in done.only("pk", "overlay").iterator(chunk_size=500):
        run.obligations = obligation_outcomes(run.overlay)
        batch.append(run)
        if len(batch) == 500:
            Run.objects.bulk_update(batch, ["obligations"])
            batch = []
    if batch:
        Run.objects.bulk_update(batch, ["obligations"])


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0017_run_automatic_reading"),
        ("audit", "0018_otlp_ingest"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="agent_version",
            field=models.CharField(
                blank=True,
                db_index=True,
                default="",
                help_text="the version of the agent that produced the trace (a release, a commit)",
                max_length=200,
                verbose_name="agent version",
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="obligations",
            field=models.JSONField(
                blank=True,
                editable=False,
                help_text="node id -> m (met), o (out of order) or x (missed); absent: not applicable",
                null=True,
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["contract", "status", "created_at"], name="run_analytics"),
        ),
        migrations.RunPython(fill_obligations, migrations.RunPython.noop, elidable=True),
    ]
