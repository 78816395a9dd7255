'use client';

import { useEffect, useState } from 'react';
import { canRenderIcon, initialOf } from '../_lib/emoji';

/**
 * An agent's icon, or a lettered avatar where the icon is no emoji or the browser cannot draw it.
 * The letter shows first (the server cannot know the browser's fonts), the emoji once measured.
 */
export function Avatar({ icon, name, className = '' }: { icon?: string; name: string; className?: string }) {
  const [emoji, setEmoji] = useState(false);
  useEffect(() => setEmoji(canRenderIcon(icon)), [icon]);
  return (
    <span className={`avatar ${emoji ? 'avatar-emoji' : 'avatar-letter'} ${className}`.trim()} aria-hidden="true" data-testid="avatar">
      {emoji ? icon : initialOf(name)}
    </span>
  );
}
