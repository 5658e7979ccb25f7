from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0008_merge_semantic_mode"),
    ]

    operations = [
        migrations.AddField(
            model_name="contract",
            name="tool_catalogue",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
